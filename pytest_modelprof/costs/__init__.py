"""Cost formulas for ATen ops: one registry, one module per op family."""

from __future__ import annotations

from functools import lru_cache

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


@lru_cache(maxsize=1)
def default_registry() -> CostRegistry:
    """The built-in formulas (built once; copy it before adding your own)."""
    reg = CostRegistry()
    # Order matters only for the in-place/functional twins the pointwise tables skip if taken.
    for family in (
        linear_algebra,
        attention,
        norm,
        recurrent,
        spatial,
        pointwise,
        vision,
        movement,
    ):
        family.register(reg)
    return reg
