"""One metric of one test over commits, as the report's SVG primitives (the template draws).

The x axis is the commit order (every commit that changed a baseline shown, evenly spaced), so
a busy week does not squeeze its steps together; the value holds between versions (a step
line). Each step is a marker whose tooltip names the commit, its date and subject, the figures
and the environment change; the largest steps also carry a visible label.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Final

from pytest_modelprof.baseline.change import format_change
from pytest_modelprof.baseline.metrics import Metric
from pytest_modelprof.history.model import CommitRow, MetricSeries
from pytest_modelprof.report._format import nice_ticks, num
from pytest_modelprof.report.model import (
    Align,
    Chart,
    LegendItem,
    SvgCircle,
    SvgLine,
    SvgPolyline,
    SvgText,
)

__all__ = ["series_chart"]

CHART_W: Final = 640.0  # the report's chart width (report.charts.CHART_W)
LEFT: Final = 92.0
RIGHT: Final = CHART_W - 24.0
TOP: Final = 34.0
BOTTOM: Final = 196.0
#: Steps with a visible label (the largest); every step keeps its tooltip.
LABELLED_STEPS: Final = 6


def _anchor(x: float) -> Align:
    return "start" if x < LEFT + 60 else ("end" if x > RIGHT - 60 else "middle")


def _value_range(values: Sequence[float]) -> tuple[float, float]:
    """The y axis: the values with a margin, never below zero for costs that are not."""
    lo, hi = min(values), max(values)
    pad = (abs(lo) * 0.1 or 1.0) if lo == hi else (hi - lo) * 0.08
    low = lo - pad
    return (0.0 if lo >= 0 > low else low), hi + pad  # a cost is never negative


def _axes(
    commits: Sequence[CommitRow],
    ticks: Sequence[float],
    py: Callable[[float], float],
    metric: Metric,
) -> tuple[list[SvgLine], list[SvgText]]:
    """The axes, the value grid and the first and last commit under the x axis."""
    lines = [SvgLine(num(LEFT), num(BOTTOM), num(RIGHT), num(BOTTOM), "axis"),
             SvgLine(num(LEFT), num(TOP), num(LEFT), num(BOTTOM), "axis")]
    texts: list[SvgText] = []
    for value in ticks:
        y = py(value)
        lines.append(SvgLine(num(LEFT), num(y), num(RIGHT), num(y), "grid"))
        texts.append(SvgText(num(LEFT - 6), num(y + 4), metric.format(value), "tick", "end"))
    first, last = commits[0], commits[-1]
    texts.append(SvgText(num(LEFT), num(BOTTOM + 16), f"{first.short} {first.date[:10]}",
                         "tick", "start"))
    if len(commits) > 1:
        texts.append(SvgText(num(RIGHT), num(BOTTOM + 16), f"{last.short} {last.date[:10]}",
                             "tick", "end"))
    texts.append(SvgText(num((LEFT + RIGHT) / 2), num(BOTTOM + 34),
                         f"commits, oldest to newest ({len(commits)} in all)", "axis-label",
                         "middle"))
    return lines, texts


def series_chart(series: MetricSeries, metric: Metric, commits: Sequence[CommitRow],
                 by_hash: Mapping[str, CommitRow]) -> Chart:
    """The chart of one series; ``commits`` gives the shared x axis."""
    title = f"{metric.label} over commits"
    legend = (LegendItem("hist-line", metric.label), LegendItem("hist-up", "worse"),
              LegendItem("hist-down", "better"), LegendItem("ridge", "environment changed"))
    order = {c.hash: i for i, c in enumerate(commits)}
    span = max(len(commits) - 1, 1)

    def px(commit: str) -> float:
        return LEFT + order[commit] / span * (RIGHT - LEFT)

    ticks = nice_ticks(*_value_range([float(p.value) for p in series.points]),
                       integer=metric.integer)
    lo, hi = ticks[0], ticks[-1]
    if hi == lo:  # one value: its own tick, mid-height
        lo, hi = lo - 1, hi + 1

    def py(value: float) -> float:
        return BOTTOM - (value - lo) / (hi - lo) * (BOTTOM - TOP)

    lines, texts = _axes(commits, ticks, py, metric)
    pts: list[str] = []
    circles: list[SvgCircle] = []
    prev_y: float | None = None
    steps: list[tuple[float, float, float, str]] = []  # (size, x, y, label)
    for p in series.points:
        x, y = px(p.commit), py(float(p.value))
        if prev_y is not None:
            pts.append(f"{num(x)},{num(prev_y)}")
        pts.append(f"{num(x)},{num(y)}")
        prev_y = y
        commit = by_hash[p.commit]
        tip = f"{commit.short} {commit.date[:10]} {commit.subject}: {metric.format(p.value)}"
        css = "hist-point"
        if p.delta:
            before = p.value - p.delta
            worse = metric.worse_by(p.value, before) > 0
            css = "hist-up" if worse else "hist-down"
            change = "from zero" if p.change is None else format_change(p.change)
            tip += f" ({metric.format(before)} \u2192 {metric.format(p.value)}, {change})"
            size = float("inf") if p.change is None else abs(p.change)
            steps.append((size, x, y, f"{commit.short} {change}"))
        if p.environment:
            tip += "; " + "; ".join(p.environment)
            lines.append(SvgLine(num(x), num(TOP - 14), num(x), num(BOTTOM), "ridge"))
            torch_change = next((e for e in p.environment if e.startswith("torch ")),
                                p.environment[0])
            texts.append(SvgText(num(x), num(TOP - 18), torch_change.split(" \u2192 ")[-1]
                                 if torch_change.startswith("torch ") else "environment",
                                 "ridge-label", _anchor(x), "; ".join(p.environment)))
        circles.append(SvgCircle(num(x), num(y), "3.5" if p.delta else "2.5", css, tip))
    if prev_y is not None:  # the newest value holds up to the newest commit shown
        pts.append(f"{num(RIGHT)},{num(prev_y)}")
    labelled = sorted(steps, key=lambda s: -s[0])[:LABELLED_STEPS]
    for k, (_, x, y, label) in enumerate(sorted(labelled, key=lambda s: s[1])):
        dy = -9.0 if k % 2 == 0 else 16.0
        y_label = min(max(y + dy, TOP + 2), BOTTOM - 4)
        texts.append(SvgText(num(x), num(y_label), label, "step-label", _anchor(x)))
    n = len(series.points)
    moved = len(steps)
    caption = (f"{n} version{'s' if n != 1 else ''}, {moved} step{'s' if moved != 1 else ''}; "
               f"newest {metric.format(series.points[-1].value)}. Hover a point for its commit.")
    return Chart(title, caption, num(CHART_W), num(BOTTOM + 44), legend, (), tuple(lines),
                 (SvgPolyline(" ".join(pts), "hist-line"),), tuple(circles), tuple(texts))
