"""``judge(evidence, baseline, limits)``: every limit of one profile as :class:`Check` rows.

One pure comparison: the table metrics go through :func:`~pytest_modelprof.baseline.compare.
compare` (the compile metrics through :func:`~pytest_modelprof.baseline.compile_rows.
compile_checks`, which names the breaks); the limits with a rule of their own (latency from
timing rounds, growth exponents from a sweep, the fvcore cross-check, uncounted ops, the
capture mode) add rows of the same type here, and every layer whose costs changed goes on the
FLOPs row (:mod:`pytest_modelprof.baseline.layers`), where the reports read it. Nothing is
measured in this module: the collectors in :mod:`pytest_modelprof.gate.collect` gather the
evidence first.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from pytest_modelprof.baseline.change import DASH
from pytest_modelprof.baseline.check import Check
from pytest_modelprof.baseline.collector import Collector, CollectorLimits
from pytest_modelprof.baseline.compare import Comparison, Policy, compare
from pytest_modelprof.baseline.layers import with_layer_changes
from pytest_modelprof.baseline.metrics import active_metrics, growth_fields
from pytest_modelprof.baseline.ops import explain_ops
from pytest_modelprof.baseline.tolerance import Exact, Ignore, Relative
from pytest_modelprof.costs.user import REGISTER_HINT
from pytest_modelprof.gate.limits import Limits
from pytest_modelprof.units import format_bytes, format_count

if TYPE_CHECKING:
    from pytest_modelprof.baseline.document import BaselineDocument
    from pytest_modelprof.runtime.noise import LatencyComparison

__all__ = [
    "FvcoreEvidence",
    "Evidence",
    "judge",
    "latency_tolerance",
]

#: Capture modes from fastest to slowest; falling back to a later one is a change worth a row.
_MODE_ORDER = ("meta", "fake", "real")
#: The metric a sweep's ``module_fits`` are fitted on (runtime.sweep: per-module FLOPs).
_MODULE_FIT_METRIC = "flops"


@dataclass(frozen=True)
class FvcoreEvidence:
    """fvcore's count beside ours on the same model and inputs, or why it could not run."""

    ours_macs: int = 0
    fvcore_macs: int = 0
    skipped: Mapping[str, int] = field(default_factory=dict)
    error: str | None = None


@dataclass(frozen=True)
class Evidence:
    """What was measured for one profile: the document, and each collector's evidence."""

    document: BaselineDocument  # the current profile as a baseline would store it
    # Collector key -> its evidence (each collector's own type): gate.collect.collect.
    collected: Mapping[str, Any] = field(default_factory=dict)
    # Layer -> op -> the lines of model code that called it now (baseline.ops.op_sites).
    op_sites: Mapping[str, Mapping[str, Sequence[str]]] | None = None


def _format_count(value: float, unit: str) -> str:
    return format_count(value, unit)


def latency_tolerance(limits: CollectorLimits) -> float:
    """The relative latency tolerance the limits set (the runtime default otherwise).

    ``max_latency_delta=0`` (``Exact``) means 0: any slowdown the rounds are sure of."""
    from pytest_modelprof.runtime import DEFAULT_TOLERANCE

    tolerance = limits.tolerances.get("latency")
    if isinstance(tolerance, Exact):
        return 0.0
    return tolerance.fraction if isinstance(tolerance, Relative) else DEFAULT_TOLERANCE


def latency_checks(
    timing: Mapping[str, Any] | None,
    baseline_timing: Mapping[str, Any] | None,
    limits: CollectorLimits,
) -> list[Check]:
    """The latency limits, judged from calibration-normalised timing rounds.

    A decisive result beyond a limit the user wrote fails (see :func:`~pytest_modelprof.
    runtime.latency_gate`); an undecided one, or any with ``timing_verdicts='warn'``, is a
    ``warning`` row. The timing chart reads the rounds from the record and the baseline.
    """
    if timing is None:
        return []
    from pytest_modelprof.runtime import (
        NormalisedTiming,
        compare_timings,
        latency_gate,
    )

    metric = active_metrics().by_name("latency")
    assert metric is not None
    from pytest_modelprof.runtime.paired import split_timing

    current, paired, fallback = split_timing(timing)
    tolerance = limits.tolerances.get("latency")
    budget = limits.budgets.get("latency")
    comparison: LatencyComparison | None = None
    # The rounds themselves travel once, on the record (``timing``) and in the baseline; the
    # row keeps the figures of the verdict.
    detail: dict[str, Any] = {"rounds": current.rounds}
    limit_parts = []
    fraction = latency_tolerance(limits)
    if tolerance is not None and not isinstance(tolerance, Ignore):
        limit_parts.append(f"{metric.delta_key}=+{fraction * 100:.1f} %")
    if budget is not None:
        limit_parts.append(f"{metric.budget_key}={budget.limit:g} ms")
    limit = ", ".join(limit_parts)
    baseline_ms: float | None = None
    judged = tolerance is not None and not isinstance(tolerance, Ignore)
    if paired is not None and judged:
        comparison, baseline_ms = paired, paired.baseline_ms
        detail.update(judged=f"paired with base {paired.paired_base}", slowdown=paired.slowdown)
        detail["confidence"] = paired.confidence
    elif baseline_timing is not None and judged and isinstance(current, NormalisedTiming):
        base = NormalisedTiming.model_validate(baseline_timing)
        baseline_ms = base.latency_ms
        try:
            comparison = compare_timings(current, base, tolerance=fraction)
        except ValueError as exc:
            return [
                Check(
                    metric=metric.name, label=metric.label, kind="latency", verdict="warning",
                    reason=f"not compared: {exc}", current=current.latency_ms,
                    baseline=baseline_ms, limit=limit,
                    current_text=metric.format(current.latency_ms),
                    baseline_text=metric.format(baseline_ms), detail=detail,
                )
            ]
        detail["confidence"] = comparison.confidence
        detail["slowdown"] = comparison.slowdown
        detail["judged"] = "stored baseline" + (f" ({fallback})" if fallback else "")
    decision = latency_gate(
        comparison,
        latency_ms=current.latency_ms,
        max_latency_ms=budget.limit if budget is not None else None,
        fast_ms=current.fast_ms,
        strict=limits.timing_fails,
    )
    figures = (
        f"{metric.format(baseline_ms)} \u2192 {metric.format(current.latency_ms)}"
        if baseline_ms is not None
        else metric.format(current.latency_ms)
    )
    # One pair of figures per reason: a comparison gives its own (the fastest rounds' mean), a
    # budget its median; the medians lead only a row that has neither.
    said = [r.removeprefix("latency ") for r in decision.reasons]
    if decision.action in ("fail", "warn"):
        reason = "; ".join(said)
        if decision.action == "warn" and limits.timing_fails is False:
            reason += "; timing_verdicts='warn' keeps this a warning"
        elif decision.action == "warn":
            reason += "; not decided: timing_verdicts='fail' makes it fail"
        verdict = "regressed" if decision.action == "fail" else "warning"
    elif getattr(decision, "notes", None):  # inconclusive: too noisy to decide, said so
        verdict = "warning"
        reason = "; ".join(n.removeprefix("latency ") for n in decision.notes)
    elif comparison is not None and comparison.verdict == "improved":
        verdict, reason = "improved", comparison.describe()
    elif comparison is not None:
        verdict, reason = "ok", comparison.describe()
    else:
        verdict, reason = "ok", f"{figures}; within {limit or 'its limits'}"
    if fallback is not None and comparison is not None:
        reason += f"; judged against the stored baseline, not paired: {fallback}"
    delta = DASH
    if comparison is not None:
        # The confidence travels with a change or an undecided one: tables show this column,
        # not the reason. "unchanged" claims none, as in the reason.
        sure = (
            f", confidence {comparison.confidence * 100:.0f} %"
            if comparison.verdict != "unchanged"
            else ""
        )
        how = "paired" if paired is not None else "normalised"
        delta = f"{comparison.slowdown * 100:+.1f} % ({how}{sure})"
    # Only a budget that fired is hard: a relative slowdown is what updating the baseline fixes.
    # A median over the budget fires it when the fast rounds agree (or timing_verdicts='fail' fails
    # it anyway); one the fast rounds do not confirm only warns, so it makes no row hard.
    over_budget = (
        budget is not None
        and current.latency_ms > budget.limit
        and (
            limits.timing_fails is True or current.fast_ms > budget.limit
        )
    )
    return [
        Check(
            metric=metric.name,
            label=metric.label,
            kind="latency",
            verdict=verdict,  # type: ignore[arg-type]
            reason=reason,
            current=current.latency_ms,
            baseline=baseline_ms,
            limit=limit,
            current_text=metric.format(current.latency_ms),
            baseline_text=metric.format(baseline_ms) if baseline_ms is not None else DASH,
            delta_text=delta,
            hard=verdict == "regressed" and over_budget,
            detail=detail,
        )
    ]


def growth_checks(sweep: Mapping[str, Any] | None, limits: CollectorLimits) -> list[Check]:
    """One row per growth limit and swept axis: the fitted exponent against its limit.

    Latency exponents are as noisy as latency and warn unless ``timing_verdicts='fail'``. A scope
    is named only for the metric the sweep fitted per module (FLOPs).
    """
    if sweep is None or not limits.growth:
        return []
    rows = []
    fields = growth_fields()
    for key, limit in sorted(limits.growth.items()):
        table = active_metrics().growth_limits().get(key)
        metric_name = fields[key]  # the profile field the sweep fitted
        label = table.label if table is not None else metric_name
        quantity = table.name if table is not None else metric_name
        for series in sweep.get("series", []):
            fit = series.get("fits", {}).get(metric_name)
            if fit is None:
                continue
            exponent = float(fit["exponent"])
            axis = series["axis"]
            values = series.get("values", [])
            # module_fits are fitted on one metric: naming its fastest scope on a memory or
            # latency row would blame the wrong place.
            per_module = metric_name == _MODULE_FIT_METRIC
            module_fits = series.get("module_fits", {}) if per_module else {}
            worst = max(module_fits.items(), key=lambda kv: kv[1]["exponent"], default=None)
            scope = (
                f"; fastest-growing scope {worst[0]!r} (exponent {worst[1]['exponent']:.2f})"
                if worst is not None else ""
            )
            span = f"{values[0]}..{values[-1]}" if values else ""
            over = exponent > limit
            verdict = "ok"
            if over:
                noisy = quantity == "latency" and limits.timing_fails is not True
                verdict = "warning" if noisy else "regressed"
            reason = (
                f"grows as {axis}^{exponent:.2f} over {span}, "
                f"{'above' if over else 'within'} {key}={limit:g}{scope}"
            )
            rows.append(
                Check(
                    metric=f"{quantity}_growth[{axis}]",
                    label=f"{label} growth ({axis})",
                    kind="growth",
                    verdict=verdict,  # type: ignore[arg-type]
                    reason=reason,
                    current=exponent,
                    limit=f"{key}={limit:g}",
                    current_text=f"{axis}^{exponent:.2f}",
                    hard=True,
                    detail={
                        "axis": axis,
                        "values": list(values),
                        "exponent": exponent,
                        "scope": worst[0] if worst is not None else None,
                    },
                )
            )
    return rows


def fvcore_check(evidence: FvcoreEvidence | None, limits: CollectorLimits) -> list[Check]:
    """With ``fvcore=True``: our MACs against fvcore's count on the same model and inputs."""
    if evidence is None or not limits.fvcore or isinstance(limits.max_fvcore_delta, Ignore):
        return []
    tolerance = limits.max_fvcore_delta
    allowed = tolerance.fraction if isinstance(tolerance, Relative) else 0.0
    limit = f"max_fvcore_delta={allowed * 100:.1f} %"
    if evidence.error is not None:
        return [
            Check(metric="fvcore_macs", label="fvcore cross-check", kind="fvcore",
                  verdict="regressed", reason=evidence.error, limit=limit, hard=True)
        ]
    ours, theirs = evidence.ours_macs, evidence.fvcore_macs
    # Relative to fvcore's count, as `modelprof fvcore` reports it.
    apart = abs(ours - theirs) / theirs if theirs else (0.0 if ours == 0 else float("inf"))
    skipped = ", ".join(f"{op} x{n}" for op, n in sorted(evidence.skipped.items()))
    reason = (
        f"ours {_format_count(ours, 'MACs')} vs fvcore {_format_count(theirs, 'MACs')} "
        f"({apart * 100:.1f} % apart, {limit})" + (f"; fvcore skipped {skipped}" if skipped else "")
    )
    return [
        Check(
            metric="fvcore_macs",
            label="fvcore cross-check",
            kind="fvcore",
            verdict="ok" if apart <= allowed else "regressed",
            reason=reason,
            current=float(ours),
            baseline=float(theirs),
            limit=limit,
            current_text=_format_count(ours, "MACs"),
            baseline_text=f"fvcore {_format_count(theirs, 'MACs')}",
            delta_text=f"{apart * 100:.1f} % apart",
            hard=True,
            detail={"skipped": dict(evidence.skipped)},
        )
    ]


def _uncounted_changes(
    now: Mapping[str, int],
    before: Mapping[str, int],
    now_bytes: Mapping[str, int],
    before_bytes: Mapping[str, int],
) -> tuple[list[str], list[str], list[str]]:
    """Per op in both: ``(ops whose calls grew, ops that only moved more bytes, ops that shrank)``
    as figures, e.g. ``mylib.attn.default \u00d71 \u2192 \u00d750, 128 B \u2192 6.4 KB moved``."""
    calls_grew, bytes_grew, shrank = [], [], []
    for op in sorted(set(now) & set(before)):
        n, b = now[op], before[op]
        # Bytes are compared only where the baseline recorded them (older files did not).
        nb, bb = now_bytes.get(op), before_bytes.get(op)
        moved, more_bytes, fewer_bytes = "", False, False
        if nb is not None and bb is not None and nb != bb:
            moved = f"{format_bytes(bb)} \u2192 {format_bytes(nb)} moved"
            more_bytes, fewer_bytes = nb > bb, nb < bb
        calls = f"{op} \u00d7{b} \u2192 \u00d7{n}" + (f", {moved}" if moved else "")
        if n > b:
            calls_grew.append(calls)
        elif more_bytes:
            bytes_grew.append(f"{op} {moved} (\u00d7{n})")
        elif n < b or fewer_bytes:
            shrank.append(calls)
    return calls_grew, bytes_grew, shrank


def _calls_text(ops: Mapping[str, int]) -> str:
    """``\u00d750 (1 op)``: the calls of all uncounted ops and how many ops they are."""
    return f"\u00d7{sum(ops.values())} ({len(ops)} op{'' if len(ops) == 1 else 's'})"


def uncounted_check(
    current: BaselineDocument,
    baseline: BaselineDocument | None,
    limits: Limits,
    *,
    env_changed: bool = False,
) -> list[Check]:
    """Ops without a cost formula, per op: calls and bytes against the baseline's.

    Their cost is missing from every total, so a new one, more calls of one or more bytes
    moved by one fails; with ``fail_on_uncounted`` any uncounted op fails. Bytes depend on
    kernels: with ``env_changed`` (another torch, device, ...) more bytes alone only warn, as the
    byte metrics do.
    """
    now = dict(current.uncounted_ops or {})
    before = baseline.uncounted_ops if baseline is not None else None
    if not now and not before:
        return []
    listing = ", ".join(f"{op} \u00d7{n}" for op, n in sorted(now.items())) or "none"
    detail: dict[str, Any] = {"ops": now}
    missing_cost = "no cost formula, so their cost is missing from every total"
    if limits.fail_on_uncounted and now:
        verdict, reason = "regressed", (
            f"{listing} have no cost formula (fail_on_uncounted); {REGISTER_HINT}, or drop "
            "fail_on_uncounted"
        )
    elif baseline is None or before is None:
        why = "no baseline yet" if baseline is None else "the baseline did not record them"
        verdict, reason = "new", f"{listing} ({why})"
    else:
        new = sorted(set(now) - set(before))
        calls_grew, bytes_grew, shrank = _uncounted_changes(
            now, before, current.uncounted_traffic or {}, baseline.uncounted_traffic or {}
        )
        gone = sorted(set(before) - set(now))
        parts = []
        if new:
            parts.append(f"newly uncounted: {', '.join(new)}")
            detail["new"] = new
        if calls_grew:
            parts.append(f"more calls: {'; '.join(calls_grew)}")
        if bytes_grew:
            parts.append(f"more bytes: {'; '.join(bytes_grew)}")
        if parts:
            # More bytes alone in another environment may be the kernels': warn, as bytes do.
            soft = not new and not calls_grew and env_changed
            verdict = "warning" if soft else "regressed"
            reason = (
                f"{'; '.join(parts)} ({missing_cost}; {REGISTER_HINT}); all uncounted: {listing}"
            )
            if soft:
                reason += "; the baseline was recorded in another environment"
        elif gone or shrank:
            verdict = "improved"
            reason = "; ".join(
                [f"now counted: {', '.join(gone)}"] * bool(gone)
                + [f"less: {'; '.join(shrank)}"] * bool(shrank)
                + [f"still uncounted: {listing}"]
            )
        else:
            verdict, reason = "ok", f"unchanged: {listing}"
    return [
        Check(
            metric="uncounted_ops",
            label="uncounted ops",
            kind="uncounted",
            verdict=verdict,  # type: ignore[arg-type]
            reason=reason,
            # The figures are calls (all uncounted ops together), as the reason's are.
            current=float(sum(now.values())),
            baseline=float(sum(before.values())) if before is not None else None,
            limit=(
                "fail_on_uncounted" if limits.fail_on_uncounted
                else "no new op, no more calls or bytes"
            ),
            current_text=_calls_text(now),
            baseline_text=_calls_text(before) if before is not None else DASH,
            delta_text=(
                f"{sum(now.values()) - sum(before.values()):+d} calls"
                if before is not None and sum(now.values()) != sum(before.values())
                else DASH
            ),
            hard=limits.fail_on_uncounted and bool(now),
            detail=detail,
        )
    ]


def capture_check(current: BaselineDocument, baseline: BaselineDocument | None) -> list[Check]:
    """A model that newly falls back to a slower capture mode (meta -> fake -> real)."""
    if baseline is None:
        return []
    old, new = baseline.environment.capture_mode, current.environment.capture_mode
    if old == new or old not in _MODE_ORDER or new not in _MODE_ORDER:
        return []
    slower = _MODE_ORDER.index(new) > _MODE_ORDER.index(old)
    return [
        Check(
            metric="capture_mode",
            label="capture mode",
            kind="capture",
            verdict="regressed" if slower else "improved",
            reason=(
                f"{old} \u2192 {new}: the model "
                + ("newly needs real data (a data-dependent op or .item() in forward)"
                   if new == "real" else "no longer runs on meta tensors")
                if slower else f"{old} \u2192 {new}: the capture got faster"
            ),
            limit="no fallback",
            current_text=new,
            baseline_text=old,
        )
    ]


def judge(
    evidence: Evidence,
    baseline: BaselineDocument | None,
    limits: Limits,
    collectors: Mapping[str, Collector[Any]],
    *,
    fail_on_environment: bool = False,
) -> Comparison:
    """Every limit of one profile as rows: the table metrics, then the rules of their own.

    Each collector judges the metrics it claims by its own rule (``Collector.checks``): rows of
    table metrics take their table places, the others follow in the collectors' order."""
    policy: Policy = limits.policy(fail_on_environment=fail_on_environment)
    found = evidence.collected
    skip = frozenset().union(*(c.judged(found.get(k)) for k, c in collectors.items()))
    comparison = compare(evidence.document, baseline, policy, skip=skip)
    own = [
        row
        for key, c in collectors.items()
        for row in c.checks(found.get(key), evidence.document, baseline, limits, policy)
    ]
    order = {m.name: i for i, m in enumerate(active_metrics())}
    table = [r for r in own if r.kind in ("delta", "budget")]
    rows = (*comparison.checks, *table)
    comparison = replace(comparison, checks=tuple(sorted(rows, key=lambda c: order[c.metric])))
    extra: Sequence[Check] = [
        *(r for r in own if r.kind not in ("delta", "budget")),
        *uncounted_check(
            evidence.document,
            baseline,
            limits,
            env_changed=bool(comparison.environment) and not fail_on_environment,
        ),
        *capture_check(evidence.document, baseline),
    ]

    explained = explain_ops(comparison.plus(extra), evidence.document, baseline, evidence.op_sites)
    return with_layer_changes(explained, evidence.document, baseline)
