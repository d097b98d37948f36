"""The terminal renderer of a diff (``modelprof compare``): metrics, then the top layer changes."""

from __future__ import annotations

import re
import textwrap
from collections.abc import Sequence

from pytest_modelprof.report.terminal import DEFAULT_WIDTH, LAYER_FLEX, render_table
from pytest_modelprof.report.view import ReportView
from pytest_modelprof.textfit import Align, fit_line

__all__ = ["render_diff"]


def render_diff(view: ReportView, *, top: int = 10, width: int = DEFAULT_WIDTH) -> str:
    """The view as plain text in at most ``width`` columns; ``top`` layer rows per profile."""
    lines = [f"{view.title}: {view.count_line}"]
    if view.empty:
        return "\n".join([*lines, view.empty, ""])
    for section in view.sections:
        s = section.summary
        lines += ["", *fit_line(f"{s.status_label.upper()}  {s.label} ({s.model})", width)]
        # A figure and its unit stay on one line ("10 K", "+40.0 %"): the blank between them
        # is non-breaking while wrapping.
        wrapped = textwrap.wrap(_UNIT_GAP.sub("\\1\u00a0", s.headline), width=width,
                                initial_indent="  ", subsequent_indent="    ",
                                break_on_hyphens=False)
        lines += [line.replace("\u00a0", " ") for line in wrapped]
        rows = [[m.label, m.baseline, m.current, m.delta, m.limit, m.verdict]
                for m in section.metrics]
        lines += _metric_table(rows, width)
        table = section.layers
        lines += fit_line(f"  {table.note.removesuffix(' Click a column to sort.')}", width)
        if table.rows and top:
            keep = (0, 1, 2, 3, 4, 5)
            headers = [table.headers[i].text for i in keep]
            body = [[row.cells[i].text for i in keep] for row in table.rows[:top]]
            lines += render_table(
                headers, body, align=["<", "<", "<", ">", ">", ">"], flex=LAYER_FLEX,
                width=width,
            )
            if len(table.rows) > top:
                lines.append(f"  ... {len(table.rows) - top} more in --html/--markdown")
        for note in section.notes:
            lines += fit_line(f"  {note}", width)
    return "\n".join(lines) + "\n"


def _metric_table(rows: Sequence[Sequence[str]], width: int) -> list[str]:
    """The metric rows; where they do not fit, columns go before a delta is cut in the middle.

    A delta cut in the middle ("+…0 %") reads as no number at all. The limit column goes
    first (every failing metric's limit is in the headline above, and all are in
    --html/--markdown), then the deltas' percentages, so each change keeps its number and unit.
    """
    headers = ["metric", "baseline", "current", "delta", "limit", "verdict"]
    aligns: list[Align] = ["<", ">", ">", ">", ">", "<"]
    keep = list(range(len(headers)))
    body = [list(r) for r in rows]
    left_out = []
    # A long limit ("no new op, no more calls or bytes") is abbreviated to 12 columns first.
    if _table_width([headers, *body], keep, {4: 12}) > width:
        keep.remove(4)
        left_out.append("limits")
    if _table_width([headers, *body], keep, {4: 12}) > width:
        for r in body:
            r[3] = _PERCENT.sub("", r[3])
        left_out.append("percentages")
    table = render_table(
        [headers[i] for i in keep],
        [[r[i] for i in keep] for r in body],
        align=[aligns[i] for i in keep],
        # Only a limit and a metric's name give way, and only so far ("peak memory" stays
        # readable); render_table's flex columns are positions among the kept ones.
        flex=((4, 12), (0, 12)) if 4 in keep else ((0, 12),),
        width=width,
    )
    if left_out:  # said, so a missing column is not mistaken for a missing limit
        note = f"  ({' and '.join(left_out)} left out at {width} columns: see --html/--markdown)"
        table += fit_line(note, width)
    return table


_UNIT_GAP = re.compile(r"(\d) (?=[A-Za-z%])")
_PERCENT = re.compile(r" \([^()]*%\)$")


def _table_width(
    rows: Sequence[Sequence[str]], keep: Sequence[int], caps: dict[int, int] | None = None
) -> int:
    """Columns the table takes with the kept columns at full width or their cap (indent, gaps)."""
    caps = caps or {}
    cells = sum(min(max(len(r[i]) for r in rows), caps.get(i, 1 << 30)) for i in keep)
    return 2 + cells + 2 * (len(keep) - 1)
