"""Compile health: Dynamo graphs, graph breaks, recompiles and (opt-in) Inductor figures.

>>> from pytest_modelprof.compile import analyze_compile
>>> health = analyze_compile("resnet18", shapes=[2, 4], dynamic=True)
>>> health.graphs, health.graph_breaks, health.recompiles
(1, 0, 0)

Importing this package does not import torch: :class:`CompileHealth` is a plain document
(profiles and baselines carry it); :func:`analyze_compile` imports torch on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pytest_modelprof.compile_health import (
    BreakReason,
    CompileHealth,
    format_compile_health,
    new_breaks,
)

if TYPE_CHECKING:
    from pytest_modelprof.compile.analyze import analyze_compile, user_location

__all__ = [
    "BreakReason",
    "CompileHealth",
    "analyze_compile",
    "format_compile_health",
    "new_breaks",
    "user_location",
]


def __getattr__(name: str) -> Any:
    # Lazy: the measuring half imports torch.
    if name in ("analyze_compile", "user_location"):
        from pytest_modelprof.compile import analyze

        return getattr(analyze, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
