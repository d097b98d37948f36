"""The terminal summary of a run: one row per gated profile, then every failed or warning row."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from pytest_modelprof.gate.record import STATUS_ORDER, GateRecord

__all__ = [
    "summary_lines",
    "problem_lines",
    "summary_columns",
    "with_change",
    "environment_line",
]


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


def environment_line(differences: Iterable[Sequence[str]]) -> str | None:
    """The run's one line on baselines from another environment; ``None`` when none is.

    ``differences``: each gated profile's ``environment`` ("torch 2.99.0 -> 2.14.1", ...). Said
    on a pass too: the gate is weaker (kernel-dependent counts only warn) until re-recorded.
    """
    per_profile = [tuple(d) for d in differences]
    changes = dict.fromkeys(c for d in per_profile for c in d)  # distinct, first-seen order
    if not changes:
        return None
    n = sum(1 for d in per_profile if d)
    return (
        f"{n} baseline{'s' if n != 1 else ''} recorded in another environment "
        f"({'; '.join(changes)}): kernel-dependent counts warn until you re-record "
        "(bytes, peak memory, subgraphs, stages; --modelprof-update-baselines re-records, "
        "--modelprof-env-strict fails them instead)"
    )


def _columns(records: Sequence[GateRecord]) -> list[tuple[str, str]]:
    return summary_columns(
        (row["metric"], row["label"], bool(row.get("summary"))) for r in records for row in r.checks
    )


def _cell(record: GateRecord, metric: str) -> str:
    row = next((c for c in record.checks if c["metric"] == metric), None)
    if row is None:
        return "n/a"
    return with_change(str(row.get("current_text") or "n/a"), str(row.get("delta_text") or ""))


def summary_lines(records: Sequence[GateRecord]) -> list[str]:
    """The rows of the terminal summary table, regressions first."""
    columns = _columns(records)
    ordered = sorted(records, key=lambda r: (STATUS_ORDER.index(r.status), r.label))
    header = ["status", "test"] + [label for _, label in columns]
    rows = [header]
    for r in ordered:
        rows.append([r.status, r.label] + [_cell(r, metric) for metric, _ in columns])
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    return [
        "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in rows
    ]


def problem_lines(records: Sequence[GateRecord]) -> list[str]:
    """Every failed limit and warning of the run, one line each, under its test; then one
    line for the run if baselines come from another environment (:func:`environment_line`)."""
    lines = []
    ordered = sorted(records, key=lambda r: (STATUS_ORDER.index(r.status), r.label))
    for r in ordered:
        # An error's message is the test's failure, printed above; once is enough.
        failures = [] if r.status == "error" else r.failures
        if not (failures or r.warnings):
            continue
        lines.append(f"{r.label}:")
        lines += [f"  FAIL {f}" for f in failures]
        lines += [f"  warn {w}" for w in r.warnings]
    env = environment_line(r.environment for r in ordered)
    if env is not None:
        lines.append(f"note: {env}")
    return lines
