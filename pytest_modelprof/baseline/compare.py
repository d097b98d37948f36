"""``compare(current, baseline, policy) -> Comparison``: pure, total, never raises part-way.

Every metric of the table gets a verdict:

* ``ok`` - within tolerance and budget;
* ``improved`` - better than the baseline by more than the tolerance;
* ``regressed`` - worse than the baseline by more than the tolerance, or over its budget;
* ``new`` - measured now, absent from the baseline (or no baseline at all);
* ``missing`` - in the baseline, not measured now;
* ``unmeasured`` - a limit is set, but the profile does not measure the metric.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from pytest_modelprof.baseline.metrics import METRICS, Metric
from pytest_modelprof.baseline.tolerance import Budget, Ignore, Tolerance, format_tolerance

if TYPE_CHECKING:
    from pytest_modelprof.baseline.document import BaselineDocument

__all__ = [
    "Verdict",
    "Policy",
    "MetricCheck",
    "LayerDelta",
    "Comparison",
    "compare",
    "format_change",
    "layer_growth",
]

Verdict = Literal["ok", "improved", "regressed", "new", "missing", "unmeasured"]


@dataclass(frozen=True)
class Policy:
    """Tolerances and budgets by metric name; a metric without an entry uses its default."""

    tolerances: Mapping[str, Tolerance] = field(default_factory=dict)
    budgets: Mapping[str, Budget] = field(default_factory=dict)
    explicit: frozenset[str] = frozenset()  # metrics whose limit the user set (not built-in)

    def tolerance(self, metric: Metric) -> Tolerance:
        """The delta tolerance for ``metric``."""
        return self.tolerances.get(metric.name, metric.default_delta)

    def budget(self, metric: Metric) -> Budget | None:
        """The absolute budget for ``metric``, if any."""
        return self.budgets.get(metric.name)


@dataclass(frozen=True)
class MetricCheck:
    """The verdict on one metric, with everything a message needs."""

    metric: Metric
    verdict: Verdict
    current: float | None
    baseline: float | None
    tolerance: Tolerance
    budget: Budget | None = None
    worse_by: float | None = None  # relative change in the worse direction
    over_budget: bool = False

    @property
    def change(self) -> float | None:
        """Signed relative change ``(current - baseline) / baseline`` (``inf`` from zero)."""
        if self.current is None or self.baseline is None:
            return None
        if self.baseline == 0:
            if self.current == 0:
                return 0.0
            return float("inf") if self.current > 0 else float("-inf")
        return (self.current - self.baseline) / abs(self.baseline)

    def describe(self) -> str:
        """One line: ``FLOPs 1.82 GFLOPs -> 2.1 GFLOPs (+15.4 %, limit +10.0 %)``."""
        m = self.metric
        if self.verdict == "unmeasured":
            return (
                f"{m.label}: a limit is set ({_limit_text(self)}) "
                f"but this profile does not measure it"
            )
        if self.verdict == "missing":
            return f"{m.label}: {m.format(self.baseline)} in the baseline, not measured now"
        parts: list[str] = []
        if self.baseline is not None:
            parts.append(
                f"{m.label}: {m.format(self.baseline)} \u2192 {m.format(self.current)} "
                f"({format_change(self.change)}, limit "
                f"{format_tolerance(self.tolerance, drop=m.direction == 'higher')})"
            )
        else:
            parts.append(f"{m.label}: {m.format(self.current)}")
        if self.over_budget and self.budget is not None:
            key = m.budget_key or "budget"
            parts.append(f"over budget {key}={m.format(self.budget.limit)}")
        return "; ".join(parts)


@dataclass(frozen=True)
class LayerDelta:
    """How one layer's cost changed; ``baseline`` is 0 for a layer that is new."""

    name: str
    type: str
    baseline: int
    current: int

    @property
    def growth(self) -> int:
        return self.current - self.baseline


@dataclass(frozen=True)
class Comparison:
    """Every metric's verdict plus the layers that grew most."""

    checks: tuple[MetricCheck, ...]
    layer_metric: Metric | None = None
    layers: tuple[LayerDelta, ...] = ()
    has_baseline: bool = True

    def by_verdict(self, *verdicts: Verdict) -> tuple[MetricCheck, ...]:
        """The checks with one of ``verdicts``, in table order."""
        return tuple(c for c in self.checks if c.verdict in verdicts)

    @property
    def regressions(self) -> tuple[MetricCheck, ...]:
        return self.by_verdict("regressed")

    @property
    def improvements(self) -> tuple[MetricCheck, ...]:
        return self.by_verdict("improved")

    @property
    def unmeasured(self) -> tuple[MetricCheck, ...]:
        return self.by_verdict("unmeasured")

    @property
    def verdict(self) -> Verdict:
        """The worst verdict over all metrics (regressed > unmeasured > improved > new > ok)."""
        worst: tuple[Verdict, ...] = ("regressed", "unmeasured", "improved")
        for v in worst:
            if self.by_verdict(v):
                return v
        return "ok" if self.has_baseline else "new"


def format_change(change: float | None) -> str:
    """``0.154`` -> ``+15.4 %``; infinities (from a zero baseline) read ``+inf %``."""
    if change is None:
        return "n/a"
    if change in (float("inf"), float("-inf")):
        return f"{'+' if change > 0 else '-'}inf %"
    return f"{change * 100:+.1f} %"


def _limit_text(check: MetricCheck) -> str:
    m = check.metric
    parts = []
    if not isinstance(check.tolerance, Ignore):
        limit = format_tolerance(check.tolerance, drop=m.direction == "higher")
        parts.append(f"{m.delta_key}={limit}")
    if check.budget is not None and m.budget_key:
        parts.append(f"{m.budget_key}={m.format(check.budget.limit)}")
    return ", ".join(parts)


def _check(
    metric: Metric,
    current: float | None,
    baseline: float | None,
    policy: Policy,
) -> MetricCheck | None:
    tolerance = policy.tolerance(metric)
    budget = policy.budget(metric)
    if current is None:
        if baseline is not None:
            return MetricCheck(metric, "missing", None, baseline, tolerance, budget)
        judged = budget is not None or (
            metric.name in policy.explicit and not isinstance(tolerance, Ignore)
        )
        if judged:
            return MetricCheck(metric, "unmeasured", None, None, tolerance, budget)
        return None  # neither measured nor asked for: nothing to say
    over = budget is not None and current > budget.limit
    if baseline is None:
        return MetricCheck(
            metric, "regressed" if over else "new", current, None, tolerance, budget, None, over
        )
    worse_by = metric.worse_by(current, baseline)
    if over or not tolerance.allows(worse_by):
        verdict: Verdict = "regressed"
    elif not isinstance(tolerance, Ignore) and not tolerance.allows(-worse_by):
        verdict = "improved"  # better by more than the tolerance: the baseline could be tighter
    else:
        verdict = "ok"
    return MetricCheck(metric, verdict, current, baseline, tolerance, budget, worse_by, over)


def layer_growth(
    current: BaselineDocument,
    baseline: BaselineDocument,
    field_name: str,
    top: int = 5,
) -> tuple[LayerDelta, ...]:
    """The ``top`` layers whose ``field_name`` grew most (new layers count from zero)."""
    before = {row.name: row for row in baseline.layers}
    after = {row.name: row for row in current.layers}
    deltas = []
    for name in sorted(set(before) | set(after)):
        b, a = before.get(name), after.get(name)
        old = int(getattr(b, field_name)) if b else 0
        new = int(getattr(a, field_name)) if a else 0
        if new > old:
            kind = (a or b).type  # type: ignore[union-attr]
            deltas.append(LayerDelta(name, kind, old, new))
    deltas.sort(key=lambda d: (-d.growth, d.name))
    return tuple(deltas[:top])


def compare(
    current: BaselineDocument,
    baseline: BaselineDocument | None,
    policy: Policy,
) -> Comparison:
    """Judge every metric of ``current`` against ``baseline`` under ``policy``."""
    checks = []
    for metric in METRICS:
        now = current.metrics.get(metric.name)
        before = baseline.metrics.get(metric.name) if baseline is not None else None
        check = _check(metric, now, before, policy)
        if check is not None:
            checks.append(check)
    layer_metric: Metric | None = None
    layers: tuple[LayerDelta, ...] = ()
    if baseline is not None:
        grown = [c.metric for c in checks if c.verdict == "regressed" and c.metric.layer_field]
        layer_metric = grown[0] if grown else None
        if layer_metric is not None and layer_metric.layer_field:
            layers = layer_growth(current, baseline, layer_metric.layer_field)
    return Comparison(tuple(checks), layer_metric, layers, baseline is not None)
