"""The HTML report as a person reads it: graph breaks said once per card, a latency
strip whose axis is not stretched by one slow round."""

from __future__ import annotations

import re
from typing import Any

from report_samples import layer, profile

from pytest_modelprof.baseline.check import Check
from pytest_modelprof.report.html import render_html
from pytest_modelprof.report.markdown import render_markdown
from pytest_modelprof.report.view import build_view
from pytest_modelprof.results.document import RunResults
from pytest_modelprof.results.record import ProfileResult
from pytest_modelprof.runtime import NormalisedTiming

BREAKS = [{"location": "model.py:12", "reason": "data-dependent if on a tensor"}]


def _compile_row(metric: str, label: str, current: float) -> Check:
    return Check(
        metric=metric,
        label=label,
        kind="delta",
        verdict="regressed",
        reason=f"{label}: 0 \u2192 {current:g}",
        current=current,
        baseline=0.0,
        detail={"breaks": BREAKS, "graphs": 2, "baseline_graphs": 1},
    )


def test_graph_breaks_are_one_section_per_card() -> None:
    # Both compile rows (breaks and graphs) carry the breaks in their detail.
    result = ProfileResult(
        nodeid="t.py::test_compiles",
        model="net",
        status="regressed",
        failed=True,
        checks=[
            _compile_row("graph_breaks", "graph breaks", 1),
            _compile_row("graphs", "graphs", 2),
        ],
    )
    view = build_view(RunResults(tests=[result]))
    assert [title for title, _ in view.sections[0].details] == [
        "Graph breaks (1), graphs 1 \u2192 2"
    ]
    assert render_html(view).count("<h3>Graph breaks (1)") == 1
    assert render_markdown(view).count("Graph breaks (1)") == 1


def _timing(model_ms: list[float]) -> dict[str, Any]:
    data: dict[str, Any] = NormalisedTiming.from_samples(
        model_ms, [0.5] * len(model_ms)
    ).model_dump(mode="json")
    return data


def test_one_slow_round_does_not_stretch_the_latency_axis() -> None:
    # 99 rounds near 1 ms and one at 9.65 ms (a busy machine for a moment).
    rounds = [0.95 + (i % 10) / 100 for i in range(99)] + [9.65]
    result = ProfileResult(
        nodeid="t.py::test_timed",
        model="net",
        status="ok",
        profile=profile("net", [layer("fc", 1000, 100)]),
        timing=_timing(rounds),
    )
    view = build_view(RunResults(tests=[result]))
    chart = next(c for c in view.sections[0].charts if c.title.startswith("Latency"))
    ticks = [
        float(m.group(1))
        for t in chart.texts
        if t.css == "tick"
        if (m := re.fullmatch(r"([\d.]+) ms", t.text))
    ]
    assert max(ticks) < 3.0, ticks  # the axis fits the mass of the rounds, not the outlier
    # The median sits in the middle part of the strip, not in its first tenth.
    left, right = float(chart.lines[0].x1), float(chart.lines[0].x2)
    median_x = next(float(line.x1) for line in chart.lines if line.css == "ai-model")
    assert (median_x - left) / (right - left) > 0.25
    # The slow round is still drawn (at the axis end) and the caption names it.
    xs = [float(c.cx) for c in chart.circles]
    assert len(xs) == 100 and max(xs) <= right
    assert "9.65 ms" in chart.caption
