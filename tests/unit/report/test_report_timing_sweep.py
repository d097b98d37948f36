"""Timing distributions and sweep curves reach the report (real sweep, timing from samples)."""

from __future__ import annotations

from typing import Any

from report_samples import layer, profile
from torch import nn

from pytest_modelprof.gate.results import ProfileResult, RunResults
from pytest_modelprof.report.html import render_html
from pytest_modelprof.report.view import build_view
from pytest_modelprof.runtime import NormalisedTiming
from pytest_modelprof.runtime.sweep import sweep


def timing(model_ms: list[float], calibration_ms: list[float]) -> dict[str, Any]:
    data: dict[str, Any] = NormalisedTiming.from_samples(model_ms, calibration_ms).model_dump(
        mode="json"
    )
    return data


def test_timing_and_sweep_charts() -> None:
    # Current rounds 1.0..1.95 ms against calibration 0.5 ms: the fastest 10 % (1.0 and 1.05 ms)
    # average 1.025, normalised 1.025 / 0.5 = 2.05.
    current = timing([1.0 + i / 20 for i in range(20)], [0.5] * 20)
    swept = sweep(
        nn.Linear(8, 8), over={"batch": [1, 2, 4]}, input_shape=(1, 8), latency=False
    ).model_dump(mode="json")
    result = ProfileResult(
        nodeid="t.py::test_x", model="Linear", status="ok",
        profile=profile("Linear", [layer("fc", 1000, 100)]), timing=current, sweep=swept,
    )
    view = build_view(RunResults(tests=[result]))
    charts = {c.title: c for c in view.sections[0].charts}
    latency = charts["Latency distribution (model time per round)"]
    assert len(latency.circles) == 20  # one dot per round
    assert "fastest 10 %: current 2.05" in latency.caption  # 1.025 / 0.5
    growth = charts["Growth over batch (log-log, relative to batch=1)"]
    assert [item.label for item in growth.legend][:2] == ["FLOPs ^1.00", "peak activations ^1.00"]
    assert len(growth.polylines) == 2  # no latency curve: the sweep was not timed
    page = render_html(view)
    assert "Latency distribution" in page and "Growth over batch" in page
    assert page.count("<polyline") >= 2
