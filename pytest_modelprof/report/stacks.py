"""Stacked bars of the rows that are parts of one total (``Metric.stack``, which a row carries
as ``detail["stack"]``), baseline above current.

Generic: any group of rows that name the same total gets a bar (the memory metrics' parts of
``train_memory`` are one group), read from the rows alone. A segment per part, with its bytes
(or whatever the unit) and its share of the total; what the total holds beyond its parts is
one more segment, "the rest". Both bars share one scale, so a grown total reads as a longer bar.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from pytest_modelprof.baseline.change import DASH
from pytest_modelprof.baseline.check import Check
from pytest_modelprof.baseline.metrics import active_metrics
from pytest_modelprof.report._format import num
from pytest_modelprof.report.model import Chart, LegendItem, SvgRect, SvgText
from pytest_modelprof.results.record import ProfileResult

__all__ = ["stack_charts"]

_WIDTH: Final = 960.0  # as wide as the section: the text keeps the other charts' size
_LEFT: Final = 150.0  # the bars' labels ("baseline 3.9 MB") sit left of here
_RIGHT: Final = 950.0
_PALETTE: Final = 8  # seg-0 ... seg-7 in report.css
_REST: Final = "seg-rest"


@dataclass(frozen=True)
class _Part:
    name: str
    css: str
    current: float
    baseline: float
    current_text: str
    baseline_text: str


def _part_name(row: Check, total: Check | None) -> str:
    """``"train memory: optimizer state"`` -> ``"optimizer state"`` under its total's label."""
    prefix = f"{total.label}: " if total is not None else ""
    return row.label[len(prefix) :] if prefix and row.label.startswith(prefix) else row.label


def _format(metric: str, value: float) -> str:
    found = active_metrics().by_name(metric)
    return found.format(value) if found is not None else f"{value:g}"


def _stack(row: Check) -> str:
    """The total ``row`` is a part of, or ``""`` (a results file is anyone's: strings only)."""
    name = row.detail.get("stack")
    return name if isinstance(name, str) else ""


def _groups(checks: Sequence[Check]) -> dict[str, list[Check]]:
    groups: dict[str, list[Check]] = {}
    for c in checks:
        if _stack(c) and (c.current is not None or c.baseline is not None):
            groups.setdefault(_stack(c), []).append(c)
    return groups


def _parts(name: str, rows: list[Check], total: Check | None) -> list[_Part]:
    parts = [
        _Part(_part_name(r, total), f"seg-{i % _PALETTE}", r.current or 0.0, r.baseline or 0.0,
              r.current_text, r.baseline_text)
        for i, r in enumerate(rows)
    ]
    if total is not None:  # what the total holds beyond its parts (buffers, inputs, ...)
        rest_now = (total.current or 0.0) - sum(p.current for p in parts)
        rest_was = (total.baseline or 0.0) - sum(p.baseline for p in parts)
        if rest_now > 0 or rest_was > 0:
            parts.append(
                _Part(f"the rest of {total.label}", _REST, max(rest_now, 0.0), max(rest_was, 0.0),
                      _format(name, max(rest_now, 0.0)), _format(name, max(rest_was, 0.0)))
            )
    return parts


def _bar(
    side: str, y: float, parts: list[_Part], total: float, total_text: str, scale: float
) -> tuple[list[SvgRect], SvgText]:
    rects = []
    x = _LEFT
    for p in parts:
        value = p.current if side == "current" else p.baseline
        text = p.current_text if side == "current" else p.baseline_text
        if value <= 0:
            continue
        width = (_RIGHT - _LEFT) * value / scale
        share = f"{100 * value / total:.1f} % of {total_text}" if total > 0 else total_text
        rects.append(
            SvgRect(num(x), num(y), num(max(width, 0.5)), "20", p.css,
                    f"{p.name}: {side} {text} ({share})")
        )
        x += width
    label = SvgText(num(_LEFT - 8), num(y + 15), f"{side} {total_text}", "label", "end")
    return rects, label


def _chart(name: str, rows: list[Check], total: Check | None) -> Chart:
    parts = _parts(name, rows, total)
    title = f"{total.label if total is not None else name}: baseline vs current"
    has_baseline = any(r.baseline is not None for r in rows)
    sides = [("baseline", 8.0)] if has_baseline else []
    sides.append(("current", 36.0 if has_baseline else 8.0))
    sums = {
        "current": total.current if total is not None and total.current is not None
        else sum(p.current for p in parts),
        "baseline": total.baseline if total is not None and total.baseline is not None
        else sum(p.baseline for p in parts),
    }
    texts = {
        "current": total.current_text if total is not None else _format(name, sums["current"]),
        "baseline": total.baseline_text if total is not None else _format(name, sums["baseline"]),
    }
    scale = max(sums["current"], sums["baseline"], 1e-12)
    rects: list[SvgRect] = []
    labels: list[SvgText] = []
    for side, y in sides:
        bar, label = _bar(side, y, parts, sums[side], texts[side] or DASH, scale)
        rects += bar
        labels.append(label)
    legend = tuple(LegendItem(p.css, p.name) for p in parts if p.current > 0 or p.baseline > 0)
    caption = (
        f"{len(rows)} parts" + (" and the rest" if len(parts) > len(rows) else "")
        + (", baseline above current" if has_baseline else "; no baseline yet")
        + ". Hover a segment for its figures."
    )
    height = sides[-1][1] + 28
    return Chart(title, caption, num(_WIDTH), num(height), legend, tuple(rects),
                 texts=tuple(labels), css="stack")


def stack_charts(result: ProfileResult) -> tuple[Chart, ...]:
    """One stacked bar per group of part rows (``detail["stack"]``) of this test's checks."""
    totals = {c.metric: c for c in result.checks if not _stack(c)}
    return tuple(
        _chart(name, rows, totals.get(name)) for name, rows in _groups(result.checks).items()
    )
