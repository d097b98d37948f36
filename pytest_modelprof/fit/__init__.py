"""Will it fit? The peak memory of an inference or training step, estimated without data.

Importing this package does not import torch (the CLI parser reads :mod:`.options`); the
engine's names load on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pytest_modelprof.fit.options import (
    OPTIMIZER_IMPLS,
    OPTIMIZERS,
    PRECISIONS,
    SHARDS,
    StepOptions,
)

if TYPE_CHECKING:
    from pytest_modelprof.fit.estimate import (
        MemoryEstimate,
        PeakMoment,
        estimate_memory,
        measure_step_memory,
    )

__all__ = [
    "MemoryEstimate",
    "OPTIMIZERS",
    "OPTIMIZER_IMPLS",
    "PRECISIONS",
    "PeakMoment",
    "SHARDS",
    "StepOptions",
    "estimate_memory",
    "measure_step_memory",
]

_LAZY = {"MemoryEstimate", "PeakMoment", "estimate_memory", "measure_step_memory"}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        from pytest_modelprof.fit import estimate

        return getattr(estimate, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
