"""The terminal summary of a run: one row per gated profile, then every failed or warning row."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from pytest_modelprof.baseline.environment import cpu_only
from pytest_modelprof.baseline.metrics import active_metrics
from pytest_modelprof.results.record import STATUS_ORDER, ProfileResult
from pytest_modelprof.textfit import Column, cut_test_id, fit_line, layout_table

__all__ = [
    "summary_lines",
    "problem_lines",
    "summary_columns",
    "with_change",
    "environment_line",
]

MIN_TEST_WIDTH = 24  # the test column shrinks (cut in the middle) down to this, then columns go


def summary_columns(rows: Iterable[tuple[str, str, bool]]) -> list[tuple[str, str]]:
    """(metric, label) of the rows marked as summary columns, in first-seen order; ``rows``
    are (metric, label, summary) of every check of every test."""
    seen: dict[str, str] = {}
    for metric, label, summary in rows:
        if summary and metric not in seen:
            seen[metric] = label
    return list(seen.items())


def with_change(current_text: str, delta_text: str) -> str:
    """A summary cell: ``"1.3 MFLOPs (+30.0 %)"`` from a row's current and delta texts."""
    if "(" in delta_text:
        return f"{current_text} {delta_text[delta_text.index('('):]}"
    return current_text


def environment_line(
    differences: Iterable[Sequence[str]], metrics: Iterable[str] | None = None
) -> str | None:
    """The run's one line on baselines from another environment; ``None`` when none is.

    ``differences``: each gated profile's ``environment`` ("torch 2.99.0 -> 2.14.1", ...). Said
    on a pass too: the gate is weaker (kernel-dependent counts only warn) until re-recorded.
    It names the counts that warn, from the metric table (``kernel_dependent``; only the
    ``cpu_dependent`` ones when only the CPU changed), among ``metrics`` (the run's row
    names) when given.
    """
    per_profile = [tuple(d) for d in differences]
    changes = dict.fromkeys(c for d in per_profile for c in d)  # distinct, first-seen order
    if not changes:
        return None
    n = sum(1 for d in per_profile if d)
    names = None if metrics is None else set(metrics)
    cpu = cpu_only(changes)
    counts = [
        m.label
        for m in active_metrics()
        if m.kernel_dependent
        and (names is None or m.name in names)
        and (m.cpu_dependent or not cpu)
    ]
    listed = f"{', '.join(counts)}; " if counts else ""
    return (
        f"{n} baseline{'s' if n != 1 else ''} recorded in another environment "
        f"({'; '.join(changes)}): kernel-dependent counts warn until you re-record "
        f"({listed}--modelprof-update-baselines re-records, "
        "--modelprof-fail-on-environment fails them instead)"
    )


def _columns(records: Sequence[ProfileResult]) -> list[tuple[str, str]]:
    return summary_columns(
        (row.metric, row.label, row.summary) for r in records for row in r.checks
    )


def _cell(record: ProfileResult, metric: str) -> str:
    row = next((c for c in record.checks if c.metric == metric), None)
    if row is None:
        return "n/a"
    return with_change(row.current_text or "n/a", row.delta_text)


def summary_lines(records: Sequence[ProfileResult], width: int | None = None) -> list[str]:
    """The rows of the terminal summary table, regressions first, in at most ``width`` columns.

    Too wide, the test column is cut in the middle (down to 24), then metric columns are left
    out from the right, those that changed in no test first; a last line names them.
    """
    metrics = _columns(records)
    ordered = sorted(records, key=lambda r: (STATUS_ORDER.index(r.status), r.label))
    rows = [[r.status, r.label] + [_cell(r, metric) for metric, _ in metrics] for r in ordered]
    # Unchanged columns (no cell shows a delta) go first, each kind from the right.
    changed = [any("(" in row[i + 2] for row in rows) for i in range(len(metrics))]
    columns = [Column("status"), Column("test", cut=cut_test_id)] + [
        Column(label, drop=int(changed[i])) for i, (_, label) in enumerate(metrics)
    ]
    table = layout_table(columns, rows, width, shrink=((1, MIN_TEST_WIDTH),))
    lines = table.lines
    if table.left_out:
        lines += fit_line(
            f"(left out to fit {width} columns: {', '.join(table.left_out)}; every figure is "
            "in --modelprof-report and --modelprof-json)",
            width or 0,
        )
    return lines


def problem_lines(
    records: Sequence[ProfileResult], width: int | None = None, *, failures: bool = True
) -> list[str]:
    """Every failed limit and warning of the run under its test, then one line for the run if
    baselines come from another environment (:func:`environment_line`), wrapped to ``width``.

    ``failures=False`` leaves failed limits out where pytest printed the test's failure (each
    is said once: under FAILURES); warnings are said nowhere else.
    """
    lines = []
    ordered = sorted(records, key=lambda r: (STATUS_ORDER.index(r.status), r.label))
    for r in ordered:
        # An error's message is the test's failure, printed above; once is enough.
        failed = [] if r.status == "error" or not failures else r.failures
        # Figures the baseline file lacks (every one is new where there is no baseline at all).
        fresh = (
            [c.describe() for c in r.checks if c.verdict == "new" and c.kind == "delta"]
            if r.baseline is not None
            else []
        )
        if not (failed or r.warnings or fresh):
            continue
        lines.append(f"{r.label}:")
        lines += [f"  FAIL {f}" for f in failed]
        lines += [f"  warn {w}" for w in r.warnings]
        lines += [f"  new  {n}" for n in fresh]
    env = environment_line(
        (r.environment for r in ordered), (c.metric for r in ordered for c in r.checks)
    )
    if env is not None:
        lines.append(f"note: {env}")
    if width is None:
        return lines
    return [out for line in lines for out in fit_line(line, width)]
