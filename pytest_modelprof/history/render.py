"""The history's peers: terminal text, Markdown and a self-contained HTML page, all laid out
from :class:`~pytest_modelprof.history.view.HistoryView` (JSON is the document itself)."""

from __future__ import annotations

from collections.abc import Sequence

from pytest_modelprof.history.view import HistoryView, StepRow, table
from pytest_modelprof.report.markdown import code, text

__all__ = ["render_text", "render_markdown", "render_html"]

HISTORY_TEMPLATE = "history.html.j2"

_HEADERS = (
    "test",
    "metric",
    "commit",
    "date",
    "before",
    "after",
    "delta",
    "change",
    "environment",
    "subject",
)


def _cells(r: StepRow) -> list[str]:
    return [
        r.test,
        r.metric,
        r.short,
        r.date,
        r.before,
        r.after,
        r.delta,
        r.change,
        r.environment,
        r.subject,
    ]


def render_text(view: HistoryView) -> str:
    """The coverage, the largest steps and each test's newest figures."""
    lines = [view.title, view.coverage, ""]
    if view.largest:
        lines.append("Largest steps:")
        lines += table(_HEADERS, [_cells(r) for r in view.largest])
    else:
        lines.append("No metric changed between the versions seen.")
    lines.append("")
    for s in view.sections:
        figures = ", ".join(f"{label} {value}" for label, value in s.latest)
        moved = sum(1 for r in s.steps if r.css)
        lines.append(f"{s.test}: {figures} ({moved} step{'s' if moved != 1 else ''})")
    lines += [f"note: {n}" for n in view.notes]
    return "\n".join(lines) + "\n"


def _md_table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    """Rows whose first cell is a test id (a code span, as in the gate's report) when the
    headers start with "test"; every other cell is plain text (commit subjects come from pull
    requests, and the table goes into the job summary)."""
    ids = headers[0] == "test"
    out = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    out += [
        "| " + " | ".join(code(c) if ids and i == 0 else text(c) for i, c in enumerate(row)) + " |"
        for row in rows
    ]
    return out


def render_markdown(view: HistoryView) -> str:
    """The history as Markdown: the largest steps, then each test's steps."""
    lines = [f"# {text(view.title)}", "", text(view.coverage), ""]
    lines.append("## Largest steps")
    lines.append("")
    if view.largest:
        lines += _md_table(_HEADERS, [_cells(r) for r in view.largest])
    else:
        lines.append("No metric changed between the versions seen.")
    for note in view.notes:
        lines += ["", f"> {text(note)}"]
    for s in view.sections:
        lines += ["", f"## {code(s.test)}", ""]
        lines.append(" \u00b7 ".join(f"{f.label}: {text(f.value)}" for f in s.facts))
        lines.append("")
        lines.append(" \u00b7 ".join(f"{label} **{text(value)}**" for label, value in s.latest))
        if s.steps:
            lines.append("")
            lines += _md_table(_HEADERS[1:], [_cells(r)[1:] for r in s.steps])
    return "\n".join(lines) + "\n"


def render_html(view: HistoryView) -> str:
    """One self-contained page: inline CSS and SVG, no network."""
    from pytest_modelprof.report.html import environment

    return environment().get_template(HISTORY_TEMPLATE).render(view=view)
