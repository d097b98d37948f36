"""Which tests measure compile health: the compile limits that switch Dynamo and Inductor on.

Torch-free. The rows the compile metrics make are judged in
:mod:`pytest_modelprof.baseline.compile_rows`; the measuring is :mod:`.analyze`.
"""

from __future__ import annotations

from typing import Final

from pytest_modelprof.baseline.metrics import COMPILE, active_metrics

__all__ = ["compile_wanted"]

#: The compile metrics only an Inductor compile measures.
INDUCTOR_METRICS: Final = frozenset({"kernels", "compile_time"})


def compile_wanted(explicit: frozenset[str]) -> tuple[bool, bool]:
    """``(dynamo, inductor)``: whether limits set on these metrics switch compile analysis on.

    Any limit on a compile metric measures graphs, breaks and recompiles; a limit on an
    Inductor metric (kernels, compile time) also compiles with Inductor.
    """
    chosen = [m.name for m in active_metrics() if m.name in explicit and m.collector == COMPILE]
    return bool(chosen), any(m in INDUCTOR_METRICS for m in chosen)
