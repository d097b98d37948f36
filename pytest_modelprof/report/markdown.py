"""The Markdown renderer: the full report (``--modelprof-markdown``) and GitHub's job summary.

Lays out the :class:`~pytest_modelprof.report.view.ReportView`; every number is formatted there.
Test ids and module names can hold any text, so each one goes into a code span (no Markdown or
HTML inside is interpreted) with ``|`` escaped for GitHub's tables. Every other text a results
file carries (labels, reasons, limits) goes through :func:`text`: a pull request from a fork
writes its own results file, and its Markdown must show as plain text.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Final
from urllib.parse import quote

from pytest_modelprof.report.view import ReportView, Section
from pytest_modelprof.textfit import cut_middle, plain

__all__ = [
    "MAX_CODE",
    "code",
    "fit",
    "render_markdown",
    "render_step_summary",
    "text",
]

#: Problems listed per test in the job summary before "and N more".
SUMMARY_PROBLEMS = 3
#: Characters of one code span (a test id, a model, layer or file name), cut in the middle so
#: both ends of a long parametrised id stay.
MAX_CODE: Final = 300
#: Characters of one text cell or list item (a reason, a headline), cut at the end.
MAX_TEXT: Final = 1_000
#: Characters of the Markdown report: it is often posted as a comment or shown as a file, and a
#: run's own text (one 100,000-character test id) must not make it megabytes.
MAX_REPORT_CHARS: Final = 200_000
#: Characters of the job summary table (GitHub takes 1 MiB per step, shared with other tools).
MAX_SUMMARY_CHARS: Final = 100_000


def fit(markdown: str, limit: int, note: str, *, cut: bool = False) -> str:
    """``markdown`` whole if it holds at most ``limit`` characters, else cut at a line end with
    ``note`` (an italic line saying where the rest is) after it, within ``limit``. ``cut``:
    something was left out before, so the note comes even when the text fits."""
    if len(markdown) <= limit and not cut:
        return markdown
    note = f"\n\n*{note}*\n"
    end = markdown.rfind("\n", 0, max(0, limit - len(note)))
    return markdown[: max(end, 0)].rstrip("\n") + note


def code(text: str) -> str:
    """``text`` as an inline code span that survives any content, inside a table cell too
    (control characters written as escapes, at most :data:`MAX_CODE` characters)."""
    flat = cut_middle(plain(" ".join(text.splitlines())), MAX_CODE).replace("|", "\\|")
    longest = run = 0
    for ch in flat:
        run = run + 1 if ch == "`" else 0
        longest = max(longest, run)
    fence = "`" * (longest + 1)
    pad = " " if flat.startswith("`") or flat.endswith("`") or not flat.strip() else ""
    return f"{fence}{pad}{flat}{pad}{fence}"


#: Characters that start Markdown or HTML (emphasis, links, images, tags, entities, tables, math).
_SPECIAL = re.compile(r"([\\`*_\[\]<>!#~|&$])")
#: What GitHub turns into a link without any special character: URLs and www. addresses.
_AUTOLINK = re.compile(r"(?i)(?<=:)//|\bwww\.")


def text(value: str) -> str:
    """``value`` as plain text on one line: no Markdown, HTML, link, image, @mention or control
    character in it, at most :data:`MAX_TEXT` characters."""
    flat = plain(" ".join(value.splitlines()))
    if len(flat) > MAX_TEXT:
        flat = flat[: MAX_TEXT - 1] + "\u2026"
    flat = _SPECIAL.sub(r"\\\1", flat)
    flat = _AUTOLINK.sub(lambda m: "\\/\\/" if m.group() == "//" else m.group()[:3] + "\\.", flat)
    # GitHub links mentions after rendering, so no escape helps: a zero-width space breaks them.
    return flat.replace("@", "@\u200b")


def _url(value: str) -> str:
    """A link destination that cannot end early: brackets, spaces and the like percent-encoded."""
    return quote(value, safe=":/?#@!$&'*+,;=%-._~")


def _cell(value: str) -> str:
    """Any text in a table cell or list item (see :func:`text`)."""
    return text(value)


def _row(cells: Sequence[str]) -> str:
    return "| " + " | ".join(cells) + " |"


def _overview(view: ReportView) -> list[str]:
    headers = ["", "test", "model", *(_cell(h) for h in view.summary_headers), "why"]
    lines = [_row(headers), _row(["---"] * len(headers))]
    for s in view.sections:
        m = s.summary
        lines.append(
            _row([f"{m.glyph} {m.status_label}", code(m.label), code(m.model),
                  *(_cell(c) for c in m.cells), _cell(m.headline)])
        )
    return lines


def _detail(section: Section) -> list[str]:
    m = section.summary
    lines = [f"### {m.glyph} {code(m.label)}", ""]
    if section.location:
        lines += [f"Defined at {code(section.location)}.", ""]
    if section.problems:
        lines += ["Why it failed:", ""]
        lines += [f"- {_cell(p)}" for p in section.problems]
        lines.append("")
    if section.warnings:
        lines += ["Warnings:", ""]
        lines += [f"- {_cell(w)}" for w in section.warnings]
        lines.append("")
    for title, entries in section.details:
        lines += [f"{_cell(title)}:", ""]
        lines += [f"- {code(e)}" for e in entries]
        lines.append("")
    if section.metrics:
        lines += [_row(["check", "baseline", "current", "delta", "limit", "verdict"]),
                  _row(["---", "---:", "---:", "---:", "---:", "---"])]
    for r in section.metrics:
        verdict = f"**{r.verdict}**" if r.verdict == "regressed" else r.verdict
        lines.append(_row([_cell(r.label), _cell(r.baseline), _cell(r.current), _cell(r.delta),
                           _cell(r.limit), verdict]))
    if section.top_layers:
        lines += ["", f"{_cell(section.top_layers_title)}:", ""]
        lines += [f"- {code(name)} ({code(kind)}): {_cell(growth)}"
                  for name, kind, growth in section.top_layers]
    lines.append("")
    return lines


def render_markdown(view: ReportView, *, limit: int = MAX_REPORT_CHARS) -> str:
    """The whole report as GitHub-flavoured Markdown: the overview, then each test's metrics;
    cut to ``limit`` characters with a note."""
    return fit(
        _markdown(view), limit,
        f"Cut to {limit:,} characters ({len(view.sections)} profiles, regressions first): "
        "the rest is in the HTML and JSON reports.",
    )


def _markdown(view: ReportView) -> str:
    lines = [f"# {view.title}", "", view.count_line, ""]
    facts = [f"{f.label} {code(f.value)}" for f in view.facts]
    if facts:
        lines += [" \u00b7 ".join(facts), ""]
    if view.empty:
        return "\n".join([*lines, view.empty, ""])
    if view.environment:
        lines += [f"> \u26a0\ufe0f {_cell(view.environment)}", ""]
    lines += [*_overview(view), ""]
    for section in view.sections:
        lines += _detail(section)
    if view.artifact_url:
        lines += [f"[Full HTML report]({_url(view.artifact_url)})", ""]
    return "\n".join(lines)


def render_step_summary(view: ReportView, *, limit: int = MAX_SUMMARY_CHARS) -> str:
    """The compact table for ``$GITHUB_STEP_SUMMARY``: regressions first, deltas, a link; cut to
    ``limit`` characters with a note."""
    return fit(
        _step_summary(view), limit,
        f"Cut to {limit:,} characters ({len(view.sections)} profiles, regressions first): "
        "the rest is in the HTML report.",
    )


def _step_summary(view: ReportView) -> str:
    lines = [f"### {view.title}", "", view.count_line, ""]
    if view.empty:
        return "\n".join([*lines, view.empty, ""])
    if view.environment:
        lines += [f"> \u26a0\ufe0f {_cell(view.environment)}", ""]
    lines += [*_overview(view), ""]
    for section in view.sections:
        if not section.problems and not section.warnings:
            continue
        if section.summary.status not in ("regressed", "missing", "error") and not section.warnings:
            continue
        shown = (section.problems or tuple("warning: " + w for w in section.warnings))
        shown = shown[:SUMMARY_PROBLEMS]
        more = len(section.problems or section.warnings) - len(shown)
        text = "; ".join(shown) + (f"; and {more} more" if more > 0 else "")
        where = f" ({code(section.location)})" if section.location else ""
        lines.append(f"- {code(section.summary.label)}{where}: {_cell(text)}")
    if any(s.problems or s.warnings for s in view.sections):
        lines.append("")
    if view.artifact_url:
        lines += [f"\U0001f4ca [Full HTML report]({_url(view.artifact_url)})", ""]
    return "\n".join(lines)
