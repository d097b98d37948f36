"""The history's peers: terminal text, Markdown and a self-contained HTML page, all laid out
from :class:`~pytest_modelprof.history.view.HistoryView` (JSON is the document itself)."""

from __future__ import annotations

from collections.abc import Sequence

from pytest_modelprof.history.view import HistoryView, StepRow
from pytest_modelprof.report.markdown import code, text
from pytest_modelprof.textfit import Column, cut_test_id, fit_line, layout_table

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
# In a narrow terminal the subject and the test id are cut first, then the environment, the
# subject, the date, the figures before and after the step and its commit are left out, in
# that order: the delta and the change are what a step is.
_COLUMNS = (
    Column("test", cut=cut_test_id),
    Column("metric"),
    Column("commit", drop=5),
    Column("date", drop=2),
    Column("before", ">", drop=3),
    Column("after", ">", drop=4),
    Column("delta", ">"),
    Column("change", ">"),
    Column("environment", drop=0),
    Column("subject", drop=1),
)
_SHRINK = ((9, 16), (0, 24), (0, 16))


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


def render_text(view: HistoryView, width: int | None = None) -> str:
    """The coverage, the largest steps and each test's newest figures, in ``width`` columns
    (the steps table leaves columns out to fit and says which)."""
    lines = [view.title, view.coverage, ""]
    if view.largest:
        lines.append("Largest steps:")
        steps = layout_table(
            _COLUMNS, [_cells(r) for r in view.largest], width, shrink=_SHRINK, rule=True
        )
        lines += steps.lines
        if steps.left_out:
            lines += fit_line(
                f"({', '.join(steps.left_out)} left out to fit {width} columns: see "
                "--html or --markdown)",
                width or 1 << 16,
            )
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
