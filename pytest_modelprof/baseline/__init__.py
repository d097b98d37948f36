"""Committed baselines: metric table, tolerances, the baseline document, storage and compare.

The light modules (tolerance, metrics, compare, store) import only the standard library; the
pydantic document lives in :mod:`pytest_modelprof.baseline.document` and is imported on use.
"""

from __future__ import annotations

from pytest_modelprof.baseline.check import Check
from pytest_modelprof.baseline.compare import Comparison, Policy, compare
from pytest_modelprof.baseline.metrics import BUILTIN_METRICS, Metric
from pytest_modelprof.baseline.store import baseline_relpath
from pytest_modelprof.baseline.tolerance import Budget, Exact, Ignore, Relative, Tolerance

__all__ = [
    "BUILTIN_METRICS",
    "Budget",
    "Comparison",
    "Exact",
    "Ignore",
    "Metric",
    "Check",
    "Policy",
    "Relative",
    "Tolerance",
    "baseline_relpath",
    "compare",
]
