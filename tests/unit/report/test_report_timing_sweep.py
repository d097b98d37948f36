"""Timing distributions and sweep curves reach the report (real sweep, timing from samples)."""

from __future__ import annotations

from typing import Any

from report_samples import layer, profile
from torch import nn

from pytest_modelprof.report.html import render_html
from pytest_modelprof.report.view import build_view
from pytest_modelprof.results.document import RunResults
from pytest_modelprof.results.record import ProfileResult
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


def test_a_memory_sweep_draws_the_estimated_steps() -> None:
    # The gate's memory growth limits add each point's step estimate (measure_more); the chart
    # draws it beside FLOPs. Here 1,000 bytes fixed plus 100 per sample: 1,100, 1,200, 1,400 at
    # batch 1, 2, 4; the log-log slope is 0.167 / 0.961 = 0.17.
    swept = sweep(
        nn.Linear(8, 8), over={"batch": [1, 2, 4]}, input_shape=(1, 8), latency=False,
        measure_more=lambda module, inputs: {
            "train_memory": 1000.0 + 100.0 * inputs[0][0].shape[0]
        },
    ).model_dump(mode="json")
    result = ProfileResult(
        nodeid="t.py::test_x", model="Linear", status="ok",
        profile=profile("Linear", [layer("fc", 1000, 100)]), sweep=swept,
    )
    (growth,) = [c for c in build_view(RunResults(tests=[result])).sections[0].charts
                 if c.title.startswith("Growth over batch")]
    assert [item.label for item in growth.legend][:3] == [
        "FLOPs ^1.00", "peak activations ^1.00", "train memory ^0.17"
    ]
    assert len(growth.polylines) == 3
