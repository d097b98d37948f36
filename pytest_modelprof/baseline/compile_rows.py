"""The compile rows: what a bare count of graphs, breaks and recompiles cannot say.

The compile metrics (``graphs``, ``graph_breaks``, ``recompiles``, ``kernels``, ``compile_time``)
are rows of the one metric table, compared like every other count; :func:`compile_checks` builds
their rows with what they mean: every graph break that is new against the baseline, with its
reason and ``file:line``, in the row's reason (so the terminal and every report show it) and in
its detail; the inputs of a recompile; and compile time, a timing, warns instead of failing
unless ``timing_verdicts='fail'``. :func:`pytest_modelprof.gate.judge.judge` calls it beside the
other rules. Torch-free; the measuring is :mod:`pytest_modelprof.compile`'s.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Final

from pytest_modelprof.baseline.check import Check
from pytest_modelprof.baseline.compare import Policy, compare
from pytest_modelprof.baseline.metrics import COMPILE, active_metrics
from pytest_modelprof.compile_health import BreakReason, CompileHealth, new_breaks

if TYPE_CHECKING:
    from pytest_modelprof.baseline.document import BaselineDocument

__all__ = ["compile_metrics", "compile_checks"]

#: At most this many breaks are spelled out in a row's reason (all are in its detail).
_SHOWN: Final = 10


def compile_metrics() -> frozenset[str]:
    """The metrics of the active table that compile health measures."""
    return frozenset(m.name for m in active_metrics() if m.collector == COMPILE)


def _listing(breaks: Sequence[BreakReason]) -> str:
    shown = "; ".join(f"{b.location}: {b.reason}" for b in breaks[:_SHOWN])
    more = len(breaks) - _SHOWN
    return shown + (f"; and {more} more" if more > 0 else "")


def _break_row(
    check: Check, current: CompileHealth, baseline: CompileHealth | None, listed: bool = False
) -> Check:
    before = baseline.break_reasons if baseline is not None else []
    fresh = new_breaks(current.break_reasons, before)
    detail = {
        **check.detail,
        "breaks": [b.model_dump() for b in current.break_reasons],
        "new_breaks": [b.model_dump() for b in fresh],
        "graphs": current.graphs,
        "baseline_graphs": baseline.graphs if baseline is not None else None,
        "ops_per_graph": list(current.ops_per_graph),
    }
    reason = check.reason
    if listed and check.metric == "graphs" and check.verdict in ("regressed", "warning"):
        reason += "; the graph breaks row names the breaks"  # each break is said once
    elif check.verdict in ("regressed", "warning", "unmeasured") and fresh:
        word = "graph break" if len(fresh) == 1 else "graph breaks"
        since = " since the baseline" if baseline is not None else ""
        reason += f"; new {word}{since}: {_listing(fresh)}"
    elif check.verdict in ("regressed", "warning") and current.break_reasons:
        # Same breaks moved, or only the graph count grew: name what is there now.
        reason += f"; graph breaks now: {_listing(current.break_reasons)}"
    return replace(check, reason=reason, detail=detail)


def _recompile_row(check: Check, current: CompileHealth) -> Check:
    detail = {**check.detail, "input_shapes": current.input_shapes, "dynamic": current.dynamic}
    shapes = ", ".join("x".join(map(str, c[0])) if c else "()" for c in current.input_shapes)
    reason = check.reason
    if check.verdict in ("regressed", "warning"):
        reason += f"; over inputs {shapes} with torch.compile(dynamic={current.dynamic})"
    return replace(check, reason=reason, detail=detail)


def _compile_time_row(check: Check, timing_fail: bool) -> Check:
    if check.verdict != "regressed" or timing_fail or check.kind == "budget":
        return check
    return replace(
        check,
        verdict="warning",
        hard=False,
        reason=check.reason + "; compile time is a timing: timing_verdicts='fail' makes this fail",
    )


def compile_checks(
    current: BaselineDocument,
    baseline: BaselineDocument | None,
    policy: Policy,
    *,
    timing_fail: bool,
) -> list[Check]:
    """The rows of the compile metrics: compared as table metrics, with the breaks named."""
    ours = compile_metrics()
    others = frozenset(m.name for m in active_metrics()) - ours
    table = compare(current, baseline, policy, skip=others)
    health = current.compile
    base = baseline.compile if baseline is not None else None
    listed = any(
        c.metric == "graph_breaks" and c.verdict in ("regressed", "warning", "unmeasured")
        for c in table.checks
    )
    rows = []
    for check in table.checks:
        if check.metric in ("graph_breaks", "graphs") and health is not None:
            check = _break_row(check, health, base, listed)
        elif check.metric == "recompiles" and health is not None:
            check = _recompile_row(check, health)
        elif check.metric == "compile_time":
            check = _compile_time_row(check, timing_fail)
        rows.append(check)
    return rows
