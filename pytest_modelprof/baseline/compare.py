"""``compare(current, baseline, policy)``: every metric of the table judged, as :class:`~pytest_
modelprof.baseline.check.Check` rows, with the layers that grew most beside a regression.

Pure and total: :func:`compare` never raises part-way.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from pytest_modelprof.baseline.change import (
    DASH,
    change_text,
    delta_text,
    format_change,
    relative_change,
)
from pytest_modelprof.baseline.check import FAILING, Check, Verdict
from pytest_modelprof.baseline.environment import environment_changes
from pytest_modelprof.baseline.metrics import Metric, active_metrics
from pytest_modelprof.baseline.tolerance import Budget, Ignore, Tolerance, format_tolerance

if TYPE_CHECKING:
    from pytest_modelprof.baseline.document import BaselineDocument

__all__ = [
    "Policy",
    "Comparison",
    "compare",
    "grown_layer_text",
]


@dataclass(frozen=True)
class Policy:
    """Tolerances and budgets by metric name; a metric without an entry uses its default."""

    tolerances: Mapping[str, Tolerance] = field(default_factory=dict)
    budgets: Mapping[str, Budget] = field(default_factory=dict)
    explicit: frozenset[str] = frozenset()  # metrics whose limit the user set (not built-in)
    # Kernel-dependent counts judged strictly even when the baseline's environment differs.
    fail_on_environment: bool = False

    def tolerance(self, metric: Metric) -> Tolerance:
        """The delta tolerance for ``metric``."""
        return self.tolerances.get(metric.name, metric.default_delta)

    def budget(self, metric: Metric) -> Budget | None:
        """The absolute budget for ``metric``, if any."""
        return self.budgets.get(metric.name)

    def delta_written(self, metric: Metric) -> bool:
        """Whether the user wrote a delta limit for ``metric`` (marker, CLI or ini) that is on."""
        written = self.tolerances.get(metric.name, Ignore())
        return metric.name in self.explicit and not isinstance(written, Ignore)



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
    """Every check's verdict plus the layers that grew most."""

    checks: tuple[Check, ...]
    layer_metric: Metric | None = None
    layers: tuple[LayerDelta, ...] = ()
    has_baseline: bool = True
    environment: tuple[str, ...] = ()  # how the run's environment differs from the baseline's

    def by_verdict(self, *verdicts: Verdict) -> tuple[Check, ...]:
        """The checks with one of ``verdicts``, in table order."""
        return tuple(c for c in self.checks if c.verdict in verdicts)

    @property
    def failures(self) -> tuple[Check, ...]:
        return self.by_verdict(*FAILING)

    @property
    def regressions(self) -> tuple[Check, ...]:
        return self.by_verdict("regressed")

    @property
    def improvements(self) -> tuple[Check, ...]:
        return self.by_verdict("improved")

    @property
    def warnings(self) -> tuple[Check, ...]:
        return self.by_verdict("warning")

    @property
    def unmeasured(self) -> tuple[Check, ...]:
        return self.by_verdict("unmeasured")

    def plus(self, checks: Sequence[Check]) -> Comparison:
        """This comparison with more rows (from the checks that have their own rule)."""
        return replace(self, checks=(*self.checks, *checks))

    @property
    def verdict(self) -> Verdict:
        """The worst verdict (regressed > unmeasured > improved > warning > new > ok)."""
        order: tuple[Verdict, ...] = ("regressed", "unmeasured", "improved", "warning")
        for v in order:
            if self.by_verdict(v):
                return v
        return "ok" if self.has_baseline else "new"


def _limit_text(metric: Metric, tolerance: Tolerance, budget: Budget | None) -> str:
    parts = []
    if not isinstance(tolerance, Ignore):
        parts.append(format_tolerance(tolerance, drop=metric.direction == "higher"))
    if budget is not None and metric.budget_key:
        parts.append(f"{metric.budget_key}={metric.format(budget.limit)}")
    return ", ".join(parts) or "ignored"


def _not_in_baseline(
    metric: Metric, current: float, policy: Policy, recorded: bool
) -> tuple[Verdict, str]:
    """A figure the baseline lacks: new, or unmeasured (a failure) under a limit the user wrote."""
    if not recorded:
        return "new", f"{metric.format(current)} (no baseline yet)"
    update = "`pytest --modelprof-update-baselines`"
    if policy.delta_written(metric):
        limit = format_tolerance(policy.tolerance(metric), drop=metric.direction == "higher")
        return "unmeasured", (
            f"a limit is set ({metric.delta_key}={limit}) but the baseline holds no "
            f"{metric.label} figure to judge it against; record one with {update}"
        )
    return "new", (
        f"{metric.format(current)}, not in the baseline (recorded before this metric was "
        f"measured here): {update} records it"
    )


def _check(
    metric: Metric,
    current: float | None,
    baseline: float | None,
    policy: Policy,
    values: Mapping[str, float],
    before: Mapping[str, float],
    env: Sequence[str],
    recorded: bool = True,
) -> Check | None:
    tolerance = policy.tolerance(metric)
    budget = policy.budget(metric)
    limit = _limit_text(metric, tolerance, budget)

    def row(verdict: Verdict, reason: str, *, kind: str = "delta", hard: bool = False) -> Check:
        return Check(
            metric=metric.name,
            label=metric.label,
            kind=kind,  # type: ignore[arg-type]
            verdict=verdict,
            reason=reason,
            current=current,
            baseline=baseline,
            limit=limit,
            current_text=metric.format(current) if current is not None else DASH,
            baseline_text=metric.format(baseline) if baseline is not None else DASH,
            delta_text=delta_text(metric, current, baseline),
            hard=hard,
            summary=metric.summary,
            # the total this row is a part of (``Metric.stack``): a segment of a stacked bar
            detail={"stack": metric.stack} if metric.stack else {},
        )

    if current is None:
        # A limit the user set fails unmeasured whether or not the baseline holds the metric:
        # "missing" would pass it silently.
        judged = budget is not None or (
            metric.name in policy.explicit and not isinstance(tolerance, Ignore)
        )
        if not judged and baseline is not None:
            return row("missing", f"{metric.format(baseline)} in the baseline, not measured now")
        if judged:
            keys = []
            if not isinstance(tolerance, Ignore):
                drop = metric.direction == "higher"
                keys.append(f"{metric.delta_key}={format_tolerance(tolerance, drop=drop)}")
            if budget is not None and metric.budget_key:
                keys.append(f"{metric.budget_key}={metric.format(budget.limit)}")
            return row(
                "unmeasured",
                f"a limit is set ({', '.join(keys)}) but this profile does not measure it; "
                f"measure it or remove the limit",
                hard=True,
            )
        return None  # neither measured nor asked for: nothing to say
    if budget is not None and current > budget.limit:
        key = metric.budget_key or "budget"
        return row(
            "regressed",
            f"{metric.format(current)} is over budget {key}={metric.format(budget.limit)}",
            kind="budget",
            hard=True,
        )
    if baseline is None:
        return row(*_not_in_baseline(metric, current, policy, recorded))
    worse_by = metric.worse_by(current, baseline)
    change = change_text(metric, current, baseline)
    figures = f"{metric.format(baseline)} \u2192 {metric.format(current)} ({change}"
    if not tolerance.allows(worse_by):
        inputs = [
            (name, before[name], values[name])
            for name in metric.derived_from
            if name in values and name in before
        ]
        held = inputs and all(
            (m := active_metrics().by_name(n)) is not None and m.worse_by(now, old) <= 0
            for n, old, now in inputs
        )
        if held:  # a derived metric moved because its inputs improved: no cost grew
            moved = ", ".join(
                f"{n} {format_change(relative_change(now, old))}" for n, old, now in inputs
            )
            return row("ok", f"{figures}); derived from {moved}: no cost grew")
        reason = f"{figures}, limit {limit})"
        if env and metric.kernel_dependent and not policy.fail_on_environment:
            return row(
                "warning",
                f"{reason}; the baseline comes from another environment "
                f"({'; '.join(env)}) and this count depends on kernels: re-record it with "
                f"--modelprof-update-baselines",
            )
        return row("regressed", reason)
    if not isinstance(tolerance, Ignore) and not tolerance.allows(-worse_by):
        reason = f"{figures}, tolerance {limit}): the baseline could be tighter"
        if env and metric.kernel_dependent and not policy.fail_on_environment:
            return row("warning", f"{reason}; environment changed ({'; '.join(env)})")
        return row("improved", reason)
    return row("ok", f"{figures}, limit {limit})" if worse_by else f"{figures}, unchanged)")


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


def grown_layer_text(layer: Mapping[str, Any]) -> str:
    """``copy (Copy): 4.1 KB -> 8.19 KB (+4.1 KB)``: one entry of a row's ``detail["layers"]``,
    as the failure text and every report name it."""
    return (
        f"{layer.get('name', '?')} ({layer.get('type', '?')}): {layer.get('baseline', DASH)} "
        f"\u2192 {layer.get('current', DASH)} ({layer.get('growth', DASH)})"
    )


def compare(
    current: BaselineDocument,
    baseline: BaselineDocument | None,
    policy: Policy,
    *,
    skip: frozenset[str] = frozenset(),
) -> Comparison:
    """Judge every table metric of ``current`` against ``baseline`` under ``policy``.

    ``skip`` names metrics another rule judges (latency, from its timing rounds; the compile
    metrics, whose rows name the breaks).
    """
    env = environment_changes(current, baseline)
    not_cpu = environment_changes(current, baseline, cpu=False)
    before = dict(baseline.metrics) if baseline is not None else {}
    checks, recorded = [], baseline is not None
    for metric in active_metrics():
        if metric.name in skip:
            continue
        now = current.metrics.get(metric.name)
        old = before.get(metric.name)
        # The CPU decides the counts that declare it (instructions); others do not run on it.
        own_env = env if metric.cpu_dependent else not_cpu
        check = _check(metric, now, old, policy, current.metrics, before, own_env, recorded)
        if check is not None:
            checks.append(check)
    layer_metric: Metric | None = None
    layers: tuple[LayerDelta, ...] = ()
    if baseline is not None:
        table = active_metrics()
        grown = [
            m for c in checks
            if c.verdict == "regressed" and (m := table.by_name(c.metric)) and m.layer_field
        ]
        layer_metric = grown[0] if grown else None
        if layer_metric is not None and layer_metric.layer_field:
            layers = layer_growth(current, baseline, layer_metric.layer_field)
            m = layer_metric
            detail = {
                "layers": [
                    {
                        "name": d.name or "<root>",
                        "type": d.type,
                        "baseline": m.format(d.baseline),
                        "current": m.format(d.current),
                        "growth": "+" + m.format(d.growth),
                    }
                    for d in layers
                ]
            }
            checks = [
                replace(c, detail={**c.detail, **detail}) if c.metric == m.name else c
                for c in checks
            ]
    return Comparison(tuple(checks), layer_metric, layers, baseline is not None, env)
