"""The terminal renderer of a diff (``modelprof compare``): metrics, then the top layer changes."""

from __future__ import annotations

import textwrap

from pytest_modelprof.report.terminal import DEFAULT_WIDTH, LAYER_FLEX, render_table
from pytest_modelprof.report.view import ReportView

__all__ = ["render_diff"]


def render_diff(view: ReportView, *, top: int = 10, width: int = DEFAULT_WIDTH) -> str:
    """The view as plain text in at most ``width`` columns; ``top`` layer rows per profile."""
    lines = [f"{view.title}: {view.count_line}"]
    if view.empty:
        return "\n".join([*lines, view.empty, ""])
    for section in view.sections:
        s = section.summary
        lines += ["", f"{s.status_label.upper()}  {s.label} ({s.model})"]
        lines += textwrap.wrap(s.headline, width=width, initial_indent="  ",
                               subsequent_indent="    ", break_on_hyphens=False)
        rows = [[m.label, m.baseline, m.current, m.delta, m.limit, m.verdict]
                for m in section.metrics]
        lines += render_table(
            ["metric", "baseline", "current", "delta", "limit", "verdict"],
            rows,
            align=["<", ">", ">", ">", ">", "<"],
            # The limit and the delta give way before a metric's name is cut ("peak …mory").
            flex=((4, 12), (3, 16), (0, 12)),
            width=width,
        )
        table = section.layers
        lines.append(f"  {table.note.removesuffix(' Click a column to sort.')}")
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
            lines.append(f"  {note}")
    return "\n".join(lines) + "\n"
