"""The one view model behind every diff report: numbers formatted, rows ordered, charts laid out.

:func:`build_view` turns a :class:`~pytest_modelprof.gate.results.RunResults` into a
:class:`ReportView` made only of strings (and tuples of them). The HTML, Markdown, GitHub and
terminal renderers lay it out and never format a number themselves, so the four agree.
Charts are computed here too, as SVG primitives in a fixed coordinate system; the template only
draws them. Nothing here escapes text: each renderer escapes for its own medium.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Final, Literal

from pytest_modelprof.baseline.compare import format_change
from pytest_modelprof.baseline.document import BaselineDocument, BaselineLayer
from pytest_modelprof.baseline.metrics import METRICS_BY_NAME, Metric
from pytest_modelprof.gate.results import CheckResult, ProfileResult, RunResults
from pytest_modelprof.schema import ModelProfile
from pytest_modelprof.units import format_bytes, format_count

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
    "headline",
]

#: How each gate status reads in a report, and its glyph for Markdown.
STATUS_LABELS: Final[dict[str, tuple[str, str]]] = {
    "regressed": ("regressed", "\u274c"),
    "missing": ("no baseline", "\u26a0\ufe0f"),
    "error": ("baseline error", "\u26a0\ufe0f"),
    "improved": ("improved", "\U0001f7e2"),
    "updated": ("baseline updated", "\U0001f504"),
    "new": ("new baseline", "\U0001f195"),
    "ok": ("ok", "\u2705"),
}
MAX_LAYER_ROWS: Final = 100
CHART_LAYERS: Final = 12
Align = Literal["start", "middle", "end"]


# -- the view model ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Fact:
    """A labelled fact of the run or a test, with an optional link."""

    label: str
    value: str
    href: str = ""


@dataclass(frozen=True)
class StatusCount:
    """How many profiles have one status."""

    status: str
    label: str
    count: str
    css: str
    glyph: str


@dataclass(frozen=True)
class MetricRow:
    """One check of one test: baseline, current, delta, limit, verdict and why."""

    label: str
    baseline: str
    current: str
    delta: str
    limit: str
    verdict: str
    css: str
    reason: str = ""
    kind: str = "delta"


@dataclass(frozen=True)
class Cell:
    """A table cell with the value its column sorts by (a number as text, or the text)."""

    text: str
    sort: str
    css: str = ""


@dataclass(frozen=True)
class LayerRow:
    """One layer that changed."""

    cells: tuple[Cell, ...]
    css: str


@dataclass(frozen=True)
class LayerTable:
    """The per-layer diff: the layers that changed, biggest FLOPs change first."""

    headers: tuple[Cell, ...]  # ``sort`` is "num" or "text": how the column sorts
    rows: tuple[LayerRow, ...]
    note: str


@dataclass(frozen=True)
class SvgRect:
    x: str
    y: str
    width: str
    height: str
    css: str
    title: str


@dataclass(frozen=True)
class SvgText:
    x: str
    y: str
    text: str
    css: str = ""
    anchor: Align = "start"
    title: str = ""


@dataclass(frozen=True)
class SvgLine:
    x1: str
    y1: str
    x2: str
    y2: str
    css: str


@dataclass(frozen=True)
class SvgCircle:
    cx: str
    cy: str
    r: str
    css: str
    title: str


@dataclass(frozen=True)
class SvgPolyline:
    points: str
    css: str


@dataclass(frozen=True)
class LegendItem:
    css: str
    label: str


@dataclass(frozen=True)
class Chart:
    """An inline SVG chart in a ``0 0 width height`` view box; ``empty`` says why it has no data."""

    title: str
    caption: str
    width: str
    height: str
    legend: tuple[LegendItem, ...] = ()
    rects: tuple[SvgRect, ...] = ()
    lines: tuple[SvgLine, ...] = ()
    polylines: tuple[SvgPolyline, ...] = ()
    circles: tuple[SvgCircle, ...] = ()
    texts: tuple[SvgText, ...] = ()
    empty: str = ""


@dataclass(frozen=True)
class Summary:
    """One row of the overview table (HTML) and of the Markdown summary."""

    anchor: str
    label: str
    model: str
    status: str
    status_label: str
    glyph: str
    css: str
    cells: tuple[str, ...]  # one per summary metric: "1.3 MFLOPs (+30.0 %)"
    headline: str


@dataclass(frozen=True)
class Section:
    """Everything the report shows about one profiled test."""

    summary: Summary
    location: str
    facts: tuple[Fact, ...]
    metrics: tuple[MetricRow, ...]
    layers: LayerTable
    charts: tuple[Chart, ...]
    notes: tuple[str, ...]
    problems: tuple[str, ...]  # one line per failed limit, with its figures
    top_layers: tuple[tuple[str, str, str], ...]  # (name, type, "+300 KFLOPs") for Markdown
    warnings: tuple[str, ...] = ()  # one line per limit that warns (latency without strict)


@dataclass(frozen=True)
class ReportView:
    """The whole report: the run, counts by status, and one section per profile."""

    title: str
    facts: tuple[Fact, ...]
    counts: tuple[StatusCount, ...]
    count_line: str
    summary_headers: tuple[str, ...]
    sections: tuple[Section, ...]
    empty: str
    artifact_url: str = ""
    generator: str = field(default="pytest-modelprof")


# -- formatting helpers --------------------------------------------------------------------------


def _num(value: float) -> str:
    """A coordinate for SVG: two decimals, no trailing zeros."""
    text = f"{value:.2f}".rstrip("0").rstrip(".")
    return "0" if text in ("-0", "") else text


def _sort_key(value: float) -> str:
    return repr(float(value))


def _signed_count(value: float, unit: str, formatter: Callable[[float], str] | None) -> str:
    if value == 0:
        return "0"
    text = formatter(abs(value)) if formatter else format_count(abs(value), unit)
    return ("+" if value > 0 else "\u2212") + text


def _change(current: float | None, baseline: float | None) -> float | None:
    if current is None or baseline is None:
        return None
    if baseline == 0:
        return 0.0 if current == 0 else math.copysign(math.inf, current)
    return (current - baseline) / abs(baseline)


def _time(value: datetime | None) -> str:
    return value.strftime("%Y-%m-%d %H:%M:%S %Z").strip() if value is not None else ""


def _metric(name: str) -> Metric | None:
    return METRICS_BY_NAME.get(name)


def _problem(check: CheckResult) -> str:
    """``FLOPs: 1.2 GFLOPs -> 1.4 GFLOPs (+15.4 %, limit +10.0 %)``: the row's own reason."""
    return check.describe()


def _problems(result: ProfileResult) -> tuple[str, ...]:
    """One line per failed limit (the rows; the record's texts for files without rows)."""
    rows = tuple(_problem(c) for c in result.checks if c.failed)
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
        "regressed": "regressed",
        "improved": "improved",
    }[result.status]


# -- per-layer diff ------------------------------------------------------------------------------


@dataclass(frozen=True)
class _LayerDiff:
    name: str
    type: str
    before: BaselineLayer | None
    after: BaselineLayer | None

    def value(self, attr: str, which: Literal["before", "after"]) -> int:
        row = self.before if which == "before" else self.after
        return int(getattr(row, attr)) if row is not None else 0

    def delta(self, attr: str) -> int:
        return self.value(attr, "after") - self.value(attr, "before")

    @property
    def kind(self) -> str:
        if self.before is None:
            return "added"
        if self.after is None:
            return "removed"
        return "grew" if self.delta("flops") > 0 or (
            self.delta("flops") == 0 and self.delta("memory") > 0
        ) else "shrank"


def _current_rows(result: ProfileResult) -> list[BaselineLayer]:
    if result.profile is None:
        return []
    doc = BaselineDocument.from_profile(
        result.profile, test=result.nodeid, name=result.name, settings={}
    )
    return list(doc.layers)


def _layer_diffs(result: ProfileResult) -> list[_LayerDiff]:
    if result.baseline is None:
        return []
    before = {row.name: row for row in result.baseline.layers}
    after = {row.name: row for row in _current_rows(result)}
    diffs = []
    for name in sorted(set(before) | set(after)):
        b, a = before.get(name), after.get(name)
        same = (
            b is not None
            and a is not None
            and (b.flops, b.macs, b.params, b.memory) == (a.flops, a.macs, a.params, a.memory)
        )
        if not same:
            row = a if a is not None else b
            diffs.append(_LayerDiff(name, row.type if row is not None else "", b, a))
    diffs.sort(key=lambda d: (-abs(d.delta("flops")), -abs(d.delta("memory")), d.name))
    return diffs


def _layer_name(name: str) -> str:
    return name or "<root>"


def _layer_table(result: ProfileResult, diffs: Sequence[_LayerDiff]) -> LayerTable:
    headers = (
        Cell("layer", "text"),
        Cell("type", "text"),
        Cell("change", "text"),
        Cell("FLOPs before", "num"),
        Cell("FLOPs after", "num"),
        Cell("\u0394 FLOPs", "num"),
        Cell("\u0394 %", "num"),
        Cell("\u0394 params", "num"),
        Cell("\u0394 memory", "num"),
    )
    if result.baseline is None:
        return LayerTable(headers, (), "No baseline to compare with: no per-layer diff.")
    total = len(result.baseline.layers)
    rows = []
    for d in diffs[:MAX_LAYER_ROWS]:
        before, after = d.value("flops", "before"), d.value("flops", "after")
        change = _change(after, before) if d.kind not in ("added", "removed") else None
        rows.append(
            LayerRow(
                cells=(
                    Cell(_layer_name(d.name), d.name),
                    Cell(d.type, d.type),
                    Cell(d.kind, d.kind),
                    Cell(format_count(before, "FLOPs") if d.before else "\u2013",
                         _sort_key(before)),
                    Cell(format_count(after, "FLOPs") if d.after else "\u2013", _sort_key(after)),
                    Cell(_signed_count(after - before, "FLOPs", None),
                         _sort_key(after - before), _sign_css(after - before)),
                    Cell(format_change(change) if change is not None else d.kind,
                         _sort_key(change if change is not None and math.isfinite(change)
                                   else (1e18 if d.kind == "added" else -1e18))),
                    Cell(_signed_count(d.delta("params"), "", None), _sort_key(d.delta("params")),
                         _sign_css(d.delta("params"))),
                    Cell(_signed_count(d.delta("memory"), "", format_bytes),
                         _sort_key(d.delta("memory")), _sign_css(d.delta("memory"))),
                ),
                css=f"layer-{d.kind}",
            )
        )
    if not diffs:
        note = f"No layer changed (of {total})."
    elif len(diffs) > MAX_LAYER_ROWS:
        note = (
            f"{len(diffs)} of {total} baseline layers changed; the {MAX_LAYER_ROWS} largest "
            f"changes are shown (the JSON results hold every layer)."
        )
    else:
        note = f"{len(diffs)} of {total} baseline layers changed. Click a column to sort."
    return LayerTable(headers, tuple(rows), note)


def _sign_css(value: float) -> str:
    return "up" if value > 0 else ("down" if value < 0 else "")


# -- charts --------------------------------------------------------------------------------------

LABEL_W: Final = 190.0
BAR_W: Final = 280.0
CHART_W: Final = 640.0


def _short(name: str, width: int = 30) -> str:
    if len(name) <= width:
        return name
    keep = (width - 1) // 2
    return name[:keep] + "\u2026" + name[-(width - 1 - keep):]


def _layer_chart(result: ProfileResult, diffs: Sequence[_LayerDiff]) -> Chart:
    title = "Per-layer FLOPs: baseline vs current"
    legend = (LegendItem("bar-base", "baseline"), LegendItem("bar-up", "grew"),
              LegendItem("bar-down", "shrank"), LegendItem("bar-same", "unchanged"))
    current = {row.name: row for row in _current_rows(result)}
    before = {row.name: row for row in result.baseline.layers} if result.baseline else {}
    picked: list[tuple[str, str, int, int]] = []
    for d in diffs:
        if d.delta("flops") != 0 and len(picked) < CHART_LAYERS:
            picked.append((d.name, d.type, d.value("flops", "before"), d.value("flops", "after")))
    if not picked:
        biggest = sorted(current.values(), key=lambda r: (-r.flops, r.name))[:CHART_LAYERS]
        for row in biggest:
            old = before.get(row.name)
            picked.append((row.name, row.type, old.flops if old else 0, row.flops))
        caption = "No layer's FLOPs changed; the largest layers are shown."
    else:
        caption = (
            f"The {len(picked)} layers whose FLOPs changed most, baseline (grey) above current."
        )
    if result.baseline is None:
        caption = "No baseline yet: current FLOPs of the largest layers."
    picked = [p for p in picked if p[2] or p[3]]
    if not picked:
        return Chart(title, "", _num(CHART_W), "60", legend, empty="No layer has FLOPs.")
    row_h, top = 30.0, 8.0
    height = top + row_h * len(picked) + 8
    scale = max(max(b, a) for _, _, b, a in picked) or 1
    rects, texts = [], []
    for i, (name, kind, b, a) in enumerate(picked):
        y = top + i * row_h
        label = f"{_layer_name(name)} ({kind})"
        texts.append(SvgText(_num(LABEL_W - 8), _num(y + 17), _short(_layer_name(name)),
                             "label", "end", label))
        css = "bar-up" if a > b else ("bar-down" if a < b else "bar-same")
        if result.baseline is not None:
            rects.append(SvgRect(_num(LABEL_W), _num(y + 3), _num(max(BAR_W * b / scale, 0.5)),
                                 "10", "bar-base",
                                 f"{label}: baseline {format_count(b, 'FLOPs')}"))
        rects.append(SvgRect(_num(LABEL_W), _num(y + 14), _num(max(BAR_W * a / scale, 0.5)),
                             "10", css, f"{label}: current {format_count(a, 'FLOPs')}"))
        value = format_count(a, "FLOPs")
        if result.baseline is not None and a != b:
            value += " (new)" if b == 0 else (
                " (removed)" if a == 0 else f" ({format_change(_change(a, b))})"
            )
        texts.append(SvgText(_num(LABEL_W + max(BAR_W * max(a, b) / scale, 0.5) + 6),
                             _num(y + 21), value, "value"))
    return Chart(title, caption, _num(CHART_W), _num(height), legend, tuple(rects), (), (), (),
                 tuple(texts))


def _op_chart(profile: ModelProfile | None) -> Chart:
    title = "Op-family breakdown (current)"
    legend = (LegendItem("bar-flops", "share of FLOPs"), LegendItem("bar-mem", "share of memory"))
    families = sorted(profile.op_breakdown, key=lambda f: (-f.flops, -f.memory, f.family)) \
        if profile is not None else []
    if not families:
        return Chart(title, "", _num(CHART_W), "60", legend,
                     empty="This profile has no op-family breakdown.")
    total_flops = sum(f.flops for f in families) or 1
    total_mem = sum(f.memory for f in families) or 1
    row_h, top = 30.0, 8.0
    height = top + row_h * len(families) + 8
    rects, texts = [], []
    for i, fam in enumerate(families):
        y = top + i * row_h
        fs, ms = fam.flops / total_flops, fam.memory / total_mem
        texts.append(SvgText(_num(LABEL_W - 8), _num(y + 17), _short(fam.family), "label", "end",
                             f"{fam.family}: {fam.count} ops"))
        rects.append(SvgRect(_num(LABEL_W), _num(y + 3), _num(max(BAR_W * fs, 0.5)), "10",
                             "bar-flops",
                             f"{fam.family}: {format_count(fam.flops, 'FLOPs')} "
                             f"({fs * 100:.1f} % of FLOPs)"))
        rects.append(SvgRect(_num(LABEL_W), _num(y + 14), _num(max(BAR_W * ms, 0.5)), "10",
                             "bar-mem",
                             f"{fam.family}: {format_bytes(fam.memory)} ({ms * 100:.1f} % of "
                             f"memory traffic)"))
        texts.append(SvgText(_num(LABEL_W + BAR_W * max(fs, ms) + 6), _num(y + 21),
                             f"{fs * 100:.1f} % \u00b7 {ms * 100:.1f} %", "value"))
    caption = (
        f"{len(families)} op families; {format_count(total_flops, 'FLOPs')} and "
        f"{format_bytes(total_mem)} moved in all."
    )
    return Chart(title, caption, _num(CHART_W), _num(height), legend, tuple(rects), (), (), (),
                 tuple(texts))


def _decade_label(exponent: int, unit: str) -> str:
    return format_count(10.0**exponent, unit)


def _roofline_chart(result: ProfileResult) -> Chart:
    title = "Roofline: arithmetic intensity against the machine balance"
    legend = (LegendItem("pt-compute", "compute-bound layer"),
              LegendItem("pt-memory", "memory-bound layer"),
              LegendItem("pt-base", "baseline layer"),
              LegendItem("ai-model", "whole model (current)"),
              LegendItem("ai-base", "whole model (baseline)"))
    profile = result.profile
    if profile is None:
        return Chart(title, "", _num(CHART_W), "60", legend, empty="No profile to plot.")
    machine = profile.machine
    balance = machine.balance
    current = [(lay.arithmetic_intensity, lay.flops, lay.name, lay.type, lay.bottleneck)
               for lay in profile.layers if lay.arithmetic_intensity > 0 and lay.flops > 0]
    baseline = [(row.flops / row.memory, row.flops, row.name, row.type)
                for row in (result.baseline.layers if result.baseline else [])
                if row.flops > 0 and row.memory > 0]
    model_ai = profile.arithmetic_intensity
    base_ai = result.baseline.metrics.get("arithmetic_intensity") if result.baseline else None
    values = [v[0] for v in current] + [v[0] for v in baseline] + [balance]
    values += [v for v in (model_ai, base_ai) if v]
    lo = math.floor(math.log10(min(values))) - (1 if min(values) == balance else 0)
    hi = math.ceil(math.log10(max(values))) + (1 if max(values) == balance else 0)
    if hi - lo < 2:
        lo, hi = lo - 1, hi + 1
    peak, bw = machine.peak_flops, machine.bandwidth
    y_hi = math.ceil(math.log10(peak)) + 0.0
    y_lo = math.floor(math.log10(min(peak, bw * 10.0**lo)))
    left, right, top, bottom = 84.0, CHART_W - 20.0, 14.0, 250.0

    def px(ai: float) -> float:
        return left + (math.log10(ai) - lo) / (hi - lo) * (right - left)

    def py(perf: float) -> float:
        return bottom - (math.log10(perf) - y_lo) / (y_hi - y_lo) * (bottom - top)

    def roof(ai: float) -> float:
        return min(peak, ai * bw)

    lines: list[SvgLine] = [
        SvgLine(_num(left), _num(bottom), _num(right), _num(bottom), "axis"),
        SvgLine(_num(left), _num(top), _num(left), _num(bottom), "axis"),
    ]
    texts: list[SvgText] = []
    for e in range(lo, hi + 1):
        x = px(10.0**e)
        lines.append(SvgLine(_num(x), _num(top), _num(x), _num(bottom), "grid"))
        texts.append(SvgText(_num(x), _num(bottom + 16), _decade_label(e, ""), "tick", "middle"))
    for e in range(int(y_lo), int(y_hi) + 1):
        y = py(10.0**e)
        lines.append(SvgLine(_num(left), _num(y), _num(right), _num(y), "grid"))
        texts.append(SvgText(_num(left - 6), _num(y + 4), _decade_label(e, "FLOP/s"), "tick",
                             "end"))
    ridge_x = px(balance)
    lines.append(SvgLine(_num(ridge_x), _num(top), _num(ridge_x), _num(bottom), "ridge"))
    ridge = f"balance {format_count(balance)} FLOPs/B ({machine.name})"
    texts.append(SvgText(_num(ridge_x + 4), _num(bottom - 6), ridge, "ridge-label"))
    for ai, css in ((base_ai, "ai-base"), (model_ai, "ai-model")):
        if ai:
            x = px(ai)
            lines.append(SvgLine(_num(x), _num(top), _num(x), _num(bottom), css))
    points = [10.0**lo, balance, 10.0**hi]
    polyline = SvgPolyline(" ".join(f"{_num(px(a))},{_num(py(roof(a)))}" for a in points), "roof")
    texts.append(SvgText(_num((left + right) / 2), _num(bottom + 34),
                         "arithmetic intensity (FLOPs/B, log scale)", "axis-label", "middle"))
    total = sum(v[1] for v in current) or 1
    circles: list[SvgCircle] = []
    for ai, flops, name, kind in sorted(baseline, key=lambda v: -v[1]):
        circles.append(SvgCircle(_num(px(ai)), _num(py(roof(ai))),
                                 _num(2.5 + 7.0 * math.sqrt(flops / total)), "pt-base",
                                 f"baseline {_layer_name(name)} ({kind}): {ai:.3g} FLOPs/B, "
                                 f"{format_count(flops, 'FLOPs')}"))
    for ai, flops, name, kind, bound in sorted(current, key=lambda v: -v[1]):
        css = "pt-compute" if bound == "compute-bound" else "pt-memory"
        circles.append(SvgCircle(_num(px(ai)), _num(py(roof(ai))),
                                 _num(2.5 + 7.0 * math.sqrt(flops / total)), css,
                                 f"{_layer_name(name)} ({kind}): {ai:.3g} FLOPs/B, "
                                 f"{format_count(flops, 'FLOPs')}, {bound}"))
    memory_bound = sum(1 for v in current if v[4] != "compute-bound")
    caption = (
        f"Each layer sits on the roof min(peak, intensity \u00d7 bandwidth) of {machine.name}; "
        f"circle area \u221d FLOPs. {memory_bound} of {len(current)} layers are left of the "
        f"ridge (memory-bound). Whole model: {model_ai:.3g} FLOPs/B"
        + (f" (baseline {base_ai:.3g})." if base_ai else ".")
    )
    return Chart(title, caption, _num(CHART_W), "300", legend, (), tuple(lines), (polyline,),
                 tuple(circles), tuple(texts))


# -- sections ------------------------------------------------------------------------------------


def _timing_chart(result: ProfileResult) -> Chart | None:
    """Per-round model times, baseline above current: whiskers min-max, box q1-q3, median."""
    if result.timing is None:
        return None
    title = "Latency distribution (model time per round)"
    legend = (LegendItem("bar-base", "baseline"), LegendItem("bar-flops", "current"))
    rows: list[tuple[str, dict[str, Any]]] = []
    base_timing = result.baseline.timing if result.baseline is not None else None
    if base_timing is not None:
        rows.append(("baseline", base_timing))
    rows.append(("current", result.timing))
    samples = [float(v) for _, t in rows for v in t["model"]["samples"]]
    if not samples:
        return Chart(title, "", _num(CHART_W), "60", legend, empty="No timing rounds recorded.")
    top_ms = max(samples) * 1.05 or 1.0
    left, right, row_h, top = LABEL_W, CHART_W - 30.0, 44.0, 10.0
    axis_y = top + row_h * len(rows) + 4

    def x(ms: float) -> float:
        return left + ms / top_ms * (right - left)

    rects, lines, circles, texts = [], [], [], []
    lines.append(SvgLine(_num(left), _num(axis_y), _num(right), _num(axis_y), "axis"))
    for k in range(6):
        ms = top_ms * k / 5
        lines.append(SvgLine(_num(x(ms)), _num(top), _num(x(ms)), _num(axis_y), "grid"))
        texts.append(SvgText(_num(x(ms)), _num(axis_y + 14), f"{ms:.3g} ms", "tick", "middle"))
    for i, (label, t) in enumerate(rows):
        m = t["model"]
        y = top + i * row_h + row_h / 2
        css = "bar-base" if label == "baseline" else "bar-flops"
        texts.append(SvgText(_num(left - 8), _num(y + 4), label, "label", "end",
                             f"{label}: {m['rounds']} rounds, median {m['median']:.3g} ms"))
        lines.append(SvgLine(_num(x(m["min"])), _num(y), _num(x(m["max"])), _num(y), "axis"))
        rects.append(SvgRect(_num(x(m["q1"])), _num(y - 8), _num(max(x(m["q3"]) - x(m["q1"]), 1)),
                             "16", css, f"{label}: q1 {m['q1']:.3g} ms, q3 {m['q3']:.3g} ms"))
        lines.append(SvgLine(_num(x(m["median"])), _num(y - 10), _num(x(m["median"])),
                             _num(y + 10), "ai-model"))
        for j, v in enumerate(m["samples"]):
            circles.append(SvgCircle(_num(x(float(v))), _num(y + 14 + (j % 3) * 2), "1.3",
                                     "pt-base", f"{label} round {j + 1}: {float(v):.3g} ms"))
    change = ""
    if base_timing is not None and base_timing.get("normalised"):
        delta = result.timing["normalised"] / base_timing["normalised"] - 1
        change = f" ({format_change(delta)})"
    caption = (
        f"{result.timing['rounds']} rounds; calibration-normalised q"
        f"{result.timing['quantile'] * 100:.0f}: current {result.timing['normalised']:.4g}"
        + (f", baseline {base_timing['normalised']:.4g}" if base_timing is not None else "")
        + change
        + ". The gate compares the normalised rounds, not these raw times."
    )
    height = axis_y + 22
    return Chart(title, caption, _num(CHART_W), _num(height), legend, tuple(rects), tuple(lines),
                 (), tuple(circles), tuple(texts))


_SWEEP_METRICS: Final = (
    ("flops", "FLOPs", "sw-flops"),
    ("peak_activation_bytes", "peak activations", "sw-peak"),
    ("latency_ms", "latency", "sw-latency"),
)


def _sweep_charts(result: ProfileResult) -> list[Chart]:
    """One log-log chart per swept axis: each metric relative to its first point."""
    if result.sweep is None:
        return []
    charts = []
    left, right, top, bottom = 84.0, CHART_W - 20.0, 14.0, 230.0
    for series in result.sweep.get("series", []):
        axis, values, points = series["axis"], series["values"], series["points"]
        fits = series.get("fits", {})
        title = f"Growth over {axis} (log-log, relative to {axis}={values[0]})"
        curves: list[tuple[str, str, str, list[float]]] = []
        for key, label, css in _SWEEP_METRICS:
            ys = [p.get(key) for p in points]
            if all(isinstance(v, (int, float)) and v > 0 for v in ys):
                fit = fits.get(key)
                shown = f"{label} ^{fit['exponent']:.2f}" if fit else label
                curves.append((css, shown, key, [float(v) / float(ys[0]) for v in ys]))
        if len(values) < 2 or not curves:
            charts.append(Chart(title, "", _num(CHART_W), "60", (),
                                empty="Not enough positive points to plot."))
            continue
        x_span = math.log10(values[-1] / values[0]) or 1.0
        y_span = max(max(math.log10(r) for _, _, _, rs in curves for r in rs), x_span, 1e-9)

        def px(value: float, v0: float = values[0], span: float = x_span) -> float:
            return left + math.log10(value / v0) / span * (right - left)

        def py(ratio: float, span: float = y_span) -> float:
            return bottom - math.log10(ratio) / span * (bottom - top)

        lines = [
            SvgLine(_num(left), _num(bottom), _num(right), _num(bottom), "axis"),
            SvgLine(_num(left), _num(top), _num(left), _num(bottom), "axis"),
        ]
        texts = []
        for slope, css in ((1.0, "ai-base"), (2.0, "ridge")):
            end_log = min(x_span, y_span / slope)  # the reference line, clipped to the plot
            end_x = left + end_log / x_span * (right - left)
            end_y = bottom - slope * end_log / y_span * (bottom - top)
            lines.append(SvgLine(_num(left), _num(bottom), _num(end_x), _num(end_y), css))
            texts.append(SvgText(_num(end_x - 4), _num(end_y + 12), f"\u221d {axis}^{slope:g}",
                                 "ridge-label", "end"))
        for v in values:
            texts.append(SvgText(_num(px(v)), _num(bottom + 16), str(v), "tick", "middle"))
        polylines, circles = [], []
        for css, shown, _key, ratios in curves:
            pts = [(px(v), py(r)) for v, r in zip(values, ratios, strict=True)]
            polylines.append(SvgPolyline(" ".join(f"{_num(a)},{_num(b)}" for a, b in pts), css))
            for (a, b), v, r in zip(pts, values, ratios, strict=True):
                circles.append(SvgCircle(_num(a), _num(b), "3", css,
                                         f"{shown}: {axis}={v}: x{r:.3g}"))
        texts.append(SvgText(_num((left + right) / 2), _num(bottom + 32), axis, "tick", "middle"))
        legend = tuple(LegendItem(css, shown) for css, shown, _, _ in curves) + (
            LegendItem("ai-base", "linear"), LegendItem("ridge", "quadratic"))
        caption = "Exponents are least-squares slopes in log-log space; the gate bounds them."
        charts.append(Chart(title, caption, _num(CHART_W), _num(bottom + 40), legend, (),
                            tuple(lines), tuple(polylines), tuple(circles), tuple(texts)))
    return charts


def _summary_cell(result: ProfileResult, name: str) -> str:
    check = next((c for c in result.checks if c.metric == name), None)
    if check is None or check.current is None:
        return "\u2013"
    text = check.current_text
    if "(" in check.delta_text:
        text += " " + check.delta_text[check.delta_text.index("("):]
    return text


def _summary_metrics(results: Sequence[ProfileResult]) -> tuple[tuple[str, str], ...]:
    """(metric, label) of the summary rows the results carry, in first-seen order."""
    seen: dict[str, str] = {}
    for r in results:
        for c in r.checks:
            if c.summary and c.metric not in seen:
                seen[c.metric] = c.label
    return tuple(seen.items())


def _metric_rows(result: ProfileResult) -> tuple[MetricRow, ...]:
    return tuple(
        MetricRow(
            label=c.label,
            baseline=c.baseline_text,
            current=c.current_text,
            delta=c.delta_text,
            limit=c.limit or "\u2013",
            verdict=c.verdict,
            css=f"v-{c.verdict}",
            reason=c.reason,
            kind=c.kind,
        )
        for c in result.checks
    )


def _facts(result: ProfileResult) -> tuple[Fact, ...]:
    facts = [Fact("model", result.model)]
    p = result.profile
    if p is not None:
        inputs = ", ".join(
            (f"{t.name}=" if t.name else "") + "\u00d7".join(str(s) for s in t.shape)
            + f" {t.dtype}"
            for t in p.inputs
        )
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
    if result.status == "ok" and warned:
        label, glyph, css = "ok, with warnings", "\u26a0\ufe0f", "v-warning"
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
    )
    diffs = _layer_diffs(result)
    problems = _problems(result)
    top = tuple(
        (_layer_name(d.name), d.type, _signed_count(d.delta("flops"), "FLOPs", None))
        for d in diffs[:5]
        if d.delta("flops") != 0
    )
    loc = f"{result.location.path}:{result.location.line}" if result.location else ""
    return Section(
        summary=summary,
        location=loc,
        facts=_facts(result),
        metrics=_metric_rows(result),
        layers=_layer_table(result, diffs),
        charts=(
            _layer_chart(result, diffs),
            _op_chart(result.profile),
            _roofline_chart(result),
            *((t,) if (t := _timing_chart(result)) is not None else ()),
            *_sweep_charts(result),
        ),
        notes=_notes(result),
        problems=problems,
        top_layers=top,
        warnings=warned,
    )


def _run_facts(results: RunResults) -> tuple[Fact, ...]:
    run = results.run
    facts = []
    if run.commit:
        href = f"{run.repository_url}/commit/{run.commit}" if run.repository_url else ""
        facts.append(Fact("commit", run.commit[:12], href))
    if run.ref:
        facts.append(Fact("ref", run.ref))
    facts.append(Fact("torch", run.torch_version or "\u2013"))
    facts.append(Fact("device", run.device or "\u2013"))
    when = run.finished or run.started
    if when is not None:
        facts.append(Fact("time", _time(when)))
    if run.started is not None and run.finished is not None:
        seconds = (run.finished - run.started).total_seconds()
        facts.append(Fact("duration", f"{seconds:.1f} s"))
    facts.append(Fact("python", f"{run.python_version} ({run.platform})"))
    facts.append(Fact("pytest-modelprof", run.modelprof_version))
    if run.shards > 1:
        facts.append(Fact("shards", str(run.shards)))
    if run.run_url:
        facts.append(Fact("CI run", run.run_url, run.run_url))
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
    return ReportView(
        title=title,
        facts=_run_facts(results),
        counts=counts,
        count_line=count_line,
        summary_headers=headers,
        sections=tuple(
            _section(i, r, [name for name, _ in columns]) for i, r in enumerate(ordered, start=1)
        ),
        empty="" if ordered else "No profiled test ran: nothing to report.",
        artifact_url=results.run.artifact_url or "",
    )
