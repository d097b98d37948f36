"""Cost formulas for ATen ops: one registry, one module per op family."""

from __future__ import annotations

from functools import lru_cache
from typing import Final

from pytest_modelprof.costs import (
    attention,
    linear_algebra,
    movement,
    norm,
    pointwise,
    recurrent,
    spatial,
    vision,
)
from pytest_modelprof.costs.registry import (
    ZERO,
    CostRegistry,
    FormulaEntry,
    OpCost,
    TensorMeta,
)

__all__ = ["CostRegistry", "FormulaEntry", "OpCost", "TensorMeta", "ZERO", "default_registry"]


#: The op-family modules, each with ``register(registry)``, in the order the default registry
#: takes them: order matters only for the in-place/functional twins the pointwise tables skip
#: if taken.
FAMILIES: Final = (
    linear_algebra,
    attention,
    norm,
    recurrent,
    spatial,
    pointwise,
    vision,
    movement,
)


@lru_cache(maxsize=1)
def default_registry() -> CostRegistry:
    """The built-in formulas (built once; copy it before adding your own)."""
    reg = CostRegistry()
    for family in FAMILIES:
        family.register(reg)
    return reg
