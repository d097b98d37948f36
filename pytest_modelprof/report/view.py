"""The one view model behind every diff report: numbers formatted, rows ordered, charts laid out.

:func:`build_view` turns a :class:`~pytest_modelprof.results.document.RunResults` into a
:class:`ReportView` made only of strings (and tuples of them). The HTML, Markdown, GitHub and
terminal renderers lay it out and never format a number themselves, so the four agree.
Charts are computed here too, as SVG primitives in a fixed coordinate system; the template only
draws them. Nothing here escapes text: each renderer escapes for its own medium; control
characters alone are written as escapes here (``\\x1b``), once for every renderer.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import fields, is_dataclass, replace
from typing import Any, Final, TypeVar, cast
from urllib.parse import urlsplit

from pytest_modelprof.baseline.check import Check
from pytest_modelprof.baseline.ops import op_change_text
from pytest_modelprof.report._format import time
from pytest_modelprof.report.charts import (
    layer_chart,
    op_chart,
    roofline_chart,
    sweep_charts,
    timing_chart,
)
from pytest_modelprof.report.layers import (
    layer_diffs,
    layer_table,
)
from pytest_modelprof.report.model import (
    STATUS_LABELS,
    Cell,
    Chart,
    Fact,
    LayerRow,
    LayerTable,
    LegendItem,
    MetricRow,
    ReportView,
    Section,
    StatusCount,
    Summary,
    SvgCircle,
    SvgLine,
    SvgPolyline,
    SvgRect,
    SvgText,
)
from pytest_modelprof.report.stacks import stack_charts
from pytest_modelprof.report.summary import environment_line, summary_columns, with_change
from pytest_modelprof.results.document import RunResults
from pytest_modelprof.results.record import ProfileResult
from pytest_modelprof.schema import describe_inputs
from pytest_modelprof.textfit import plain

_T = TypeVar("_T")

__all__ = [
    "STATUS_LABELS",
    "Fact",
    "StatusCount",
    "MetricRow",
    "Cell",
    "LayerRow",
    "LayerTable",
    "SvgRect",
    "SvgText",
    "SvgLine",
    "SvgCircle",
    "SvgPolyline",
    "LegendItem",
    "Chart",
    "Summary",
    "Section",
    "ReportView",
    "build_view",
    "breakable",
    "headline",
]



def _problem(check: Check) -> str:
    """``FLOPs: 1.2 GFLOPs -> 1.4 GFLOPs (+15.4 %, limit +10.0 %)``: the row's own reason."""
    return check.describe()



def _problems(result: ProfileResult) -> tuple[str, ...]:
    """One line per failed limit (the rows; the record's texts for files without rows); an
    error's message comes first."""
    rows = tuple(_problem(c) for c in result.checks if c.failed)
    if result.status == "error":
        return (*result.failures, *rows)
    if result.status == "improved" and not rows:
        rows = tuple(_problem(c) for c in result.checks if c.verdict == "improved")
    return rows or tuple(result.failures)



def _warnings(result: ProfileResult) -> tuple[str, ...]:
    rows = tuple(_problem(c) for c in result.checks if c.verdict == "warning")
    return rows or tuple(result.warnings)



def headline(result: ProfileResult) -> str:
    """One line that says why a profile has its status."""
    parts = list(_problems(result))
    if parts:
        return "; ".join(parts)
    warned = _warnings(result)
    if warned:
        return "warning: " + "; ".join(warned)
    return {
        "missing": "no baseline yet",
        "error": "the baseline could not be read",
        "updated": "baseline rewritten",
        "new": "baseline written",
        "ok": "within limits",
        "warning": "warning",
        "regressed": "regressed",
        "improved": "improved",
    }[result.status]



_BREAKS: Final = re.compile(r"(?<=/|:|\[|\]|,|-|_)(?=[^:\]])")


def breakable(label: str) -> tuple[str, ...]:
    """``label`` cut after each separator: the places a long test id may wrap."""
    return tuple(part for part in _BREAKS.split(label) if part) or (label,)



def _summary_cell(result: ProfileResult, name: str) -> str:
    check = next((c for c in result.checks if c.metric == name), None)
    if check is None or check.current is None:
        return "\u2013"
    return with_change(check.current_text, check.delta_text)



def _summary_metrics(results: Sequence[ProfileResult]) -> tuple[tuple[str, str], ...]:
    """(metric, label) of the summary rows the results carry, in first-seen order."""
    return tuple(summary_columns((c.metric, c.label, c.summary) for r in results for c in r.checks))



def _metric_rows(result: ProfileResult) -> tuple[MetricRow, ...]:
    return tuple(MetricRow(c) for c in result.checks)



def _facts(result: ProfileResult) -> tuple[Fact, ...]:
    facts = [Fact("model", result.model)]
    p = result.profile
    if p is not None:
        inputs = describe_inputs(p.inputs)
        facts.append(Fact("inputs", inputs or "\u2013"))
        facts.append(Fact("capture", f"{p.capture.mode} ({p.capture.reason})"))
        facts.append(Fact("machine", f"{p.machine.name}, balance {p.machine.balance:.3g} FLOPs/B"))
    if result.baseline_path:
        facts.append(Fact("baseline file", result.baseline_path))
    if result.baseline is not None:
        env = result.baseline.environment
        facts.append(Fact("baseline from", f"torch {env.torch_version}, {env.device}, "
                                           f"{env.dtype}, {env.capture_mode} capture"))
    return tuple(facts)



def _notes(result: ProfileResult) -> tuple[str, ...]:
    notes = []
    if result.environment:
        notes.append(
            "The baseline was recorded in another environment: "
            + "; ".join(result.environment)
            + ". Kernel-dependent counts warn instead of failing; re-record the baseline to "
            "judge them again."
        )
    p = result.profile
    if p is None:
        return tuple(notes)
    if p.uncounted_ops:
        listing = ", ".join(f"{u.op} \u00d7{u.count}" for u in p.uncounted_ops)
        notes.append(f"Ops without a cost formula (not counted): {listing}.")
    if p.uncalled_modules:
        shown = ", ".join(p.uncalled_modules[:10])
        more = len(p.uncalled_modules) - 10
        notes.append(f"Modules that never ran: {shown}" + (f" and {more} more." if more > 0
                                                           else "."))
    return tuple(notes)



def _section(index: int, result: ProfileResult, columns: Sequence[str]) -> Section:
    label, glyph = STATUS_LABELS[result.status]
    warned = _warnings(result)
    css = f"v-{result.status}"
    if result.status == "ok" and warned:  # results files written before the "warning" status
        label, glyph, css = STATUS_LABELS["warning"][0], STATUS_LABELS["warning"][1], "v-warning"
    summary = Summary(
        anchor=f"profile-{index}",
        label=result.label,
        model=result.model,
        status=result.status,
        status_label=label,
        glyph=glyph,
        css=css,
        cells=tuple(_summary_cell(result, name) for name in columns),
        headline=headline(result),
        label_parts=breakable(result.label),
    )
    diffs = layer_diffs(result)
    problems = _problems(result)
    grown_title, grown = _grown_layers(result)
    loc = f"{result.location.path}:{result.location.line}" if result.location else ""
    # A test that failed before it was profiled has nothing to draw: its message is the section.
    charts = (
        ()
        if result.profile is None and result.status == "error"
        else (
            layer_chart(result, diffs),
            op_chart(result.profile, result.baseline),
            roofline_chart(result),
            *((t,) if (t := timing_chart(result)) is not None else ()),
            *sweep_charts(result),
        )
    )
    return Section(
        summary=summary,
        location=loc,
        facts=_facts(result),
        metrics=_metric_rows(result),
        layers=layer_table(result, diffs),
        charts=charts,
        notes=_notes(result),
        problems=problems,
        top_layers=grown,
        top_layers_title=grown_title,
        warnings=warned,
        details=_details(result),
        stacks=stack_charts(result),
    )


DASH: Final = "\u2013"
#: At most this many entries of a detail list are shown in a report.
MAX_DETAIL_LINES: Final = 25


def _grown_layers(result: ProfileResult) -> tuple[str, tuple[tuple[str, str, str], ...]]:
    """(title, (name, type, growth) ...) of the layers that grew most, read from the row that
    carries them (the failure text lists the same ones); ``("", ())`` when no row does."""
    for c in result.checks:
        layers = c.detail.get("layers")
        if layers and isinstance(layers, list):  # a results file is anyone's: take dicts only
            rows = tuple(
                (str(d.get("name", "?")), str(d.get("type", "?")), str(d.get("growth", DASH)))
                for d in layers[:MAX_DETAIL_LINES]
                if isinstance(d, dict)
            )
            return f"Layers whose {c.label} grew most", rows
    return "", ()


def _details(result: ProfileResult) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """The lists a row's detail carries, whatever the kind of check: graph breaks with their
    source lines (compile health; several rows carry the same breaks, shown once), newly
    uncounted ops, the ops whose calls changed with the lines that called them."""
    out = []
    breaks_shown = False
    for c in result.checks:
        breaks = c.detail.get("breaks")
        if breaks and not breaks_shown:
            breaks_shown = True
            lines = tuple(f"{b['location']}: {b['reason']}" for b in breaks[:MAX_DETAIL_LINES])
            graphs = c.detail.get("graphs")
            before = c.detail.get("baseline_graphs")
            head = f"Graph breaks ({len(breaks)})"
            if graphs is not None:
                was = before if before is not None else DASH
                head += f", graphs {was} \u2192 {graphs}"
            out.append((head, lines))
        new_ops = c.detail.get("new")
        if c.kind == "uncounted" and new_ops:
            out.append(("Newly uncounted ops", tuple(str(op) for op in new_ops)))
        ops = c.detail.get("op_changes")
        if ops and isinstance(ops, list):  # a results file is anyone's: take dicts only
            lines = tuple(op_change_text(d) for d in ops[:MAX_DETAIL_LINES] if isinstance(d, dict))
            more = c.detail.get("op_changes_more")
            if isinstance(more, int) and more > 0:
                lines += (f"and {more} more",)
            out.append(("Ops whose calls changed (baseline \u2192 current)", lines))
    # Figures the baseline file does not hold: measured now, judged once it records them.
    fresh = [c.describe() for c in result.checks if c.verdict == "new" and c.kind == "delta"]
    if result.baseline is not None and fresh:
        out.append(("Not in the baseline (new)", tuple(fresh[:MAX_DETAIL_LINES])))
    return tuple(out)



def http_url(url: str | None) -> str:
    """``url`` if it is an absolute http(s) URL, else ``""``: the only links a report makes.

    A results file is written by whoever ran the gate (a fork's pull request, say), so a
    ``javascript:`` or ``data:`` URL in it must not become a link.
    """
    if not url:
        return ""
    parts = urlsplit(url.strip())
    return url.strip() if parts.scheme.lower() in ("http", "https") and parts.netloc else ""


def _run_facts(results: RunResults) -> tuple[Fact, ...]:
    run = results.run
    facts = []
    if run.commit:
        repo = http_url(run.repository_url)
        href = http_url(f"{repo}/commit/{run.commit}") if repo else ""
        facts.append(Fact("commit", run.commit[:12], href))
    if run.ref:
        facts.append(Fact("ref", run.ref))
    facts.append(Fact("torch", run.torch_version or "\u2013"))
    facts.append(Fact("device", run.device or "\u2013"))
    when = run.finished or run.started
    if when is not None:
        facts.append(Fact("time", time(when)))
    if run.started is not None and run.finished is not None:
        seconds = (run.finished - run.started).total_seconds()
        facts.append(Fact("duration", f"{seconds:.1f} s"))
    facts.append(Fact("python", f"{run.python_version} ({run.platform})"))
    facts.append(Fact("pytest-modelprof", run.modelprof_version))
    if run.shards > 1:
        facts.append(Fact("shards", str(run.shards)))
    if run.run_url:
        facts.append(Fact("CI run", run.run_url, http_url(run.run_url)))
    return tuple(facts)



def build_view(results: RunResults, *, title: str = "modelprof cost report") -> ReportView:
    """The view model of a run: regressions first, every number formatted."""
    ordered = results.ordered()
    counts = tuple(
        StatusCount(status, STATUS_LABELS[status][0], str(n), f"v-{status}",
                    STATUS_LABELS[status][1])
        for status, n in results.counts().items()
    )
    n = len(ordered)
    count_line = ", ".join(f"{c.count} {c.label}" for c in counts) if counts else ""
    count_line = f"{n} profile{'s' if n != 1 else ''}" + (f": {count_line}" if count_line else "")
    columns = _summary_metrics(ordered)
    headers = tuple(label for _, label in columns)
    return _plain(ReportView(
        title=title,
        facts=_run_facts(results),
        counts=counts,
        count_line=count_line,
        summary_headers=headers,
        sections=tuple(
            _section(i, r, [name for name, _ in columns]) for i, r in enumerate(ordered, start=1)
        ),
        empty="" if ordered else "No profiled test ran: nothing to report.",
        artifact_url=http_url(results.run.artifact_url),
        environment=environment_line(
            (r.environment for r in ordered), (c.metric for r in ordered for c in r.checks)
        )
        or "",
    ))


def _plain(value: _T) -> _T:
    """``value`` with every string in it passed through :func:`~pytest_modelprof.textfit.plain`
    (the view's records, the rows they hold and the rows' details); what holds no control
    character is returned as it is, so a clean view costs one scan."""
    out: Any = value
    if isinstance(value, str):
        out = plain(value)
    elif isinstance(value, (tuple, list)):
        items = [_plain(v) for v in value]
        if any(a is not b for a, b in zip(items, value, strict=True)):
            out = type(value)(items)
    elif isinstance(value, Mapping):
        pairs = {_plain(k): _plain(v) for k, v in value.items()}
        if any(k not in value or value[k] is not v for k, v in pairs.items()):
            out = pairs
    elif is_dataclass(value) and not isinstance(value, type):
        changed = {
            f.name: new for f in fields(value)
            if f.init and (new := _plain(old := getattr(value, f.name))) is not old
        }
        if changed:
            out = replace(value, **changed)
    return cast(_T, out)
