"""The compile-health record, where the measuring package's users look for it.

It lives in :mod:`pytest_modelprof.compile_health`, a torch-free leaf beside the schema, so
profiles and baselines carry it without importing the compile package.
"""

from __future__ import annotations

from pytest_modelprof.compile_health import (
    BreakReason,
    CompileHealth,
    format_compile_health,
    new_breaks,
)

__all__ = ["BreakReason", "CompileHealth", "new_breaks", "format_compile_health"]
