"""The history charts' value axis: round ticks, integers for an integer metric."""

from __future__ import annotations

import math

import pytest

from pytest_modelprof.baseline.metrics import BUILTIN_METRICS
from pytest_modelprof.history.charts import series_chart
from pytest_modelprof.history.model import CommitRow, MetricSeries, Point
from pytest_modelprof.report._format import nice_ticks


def _chart_ticks(metric_name: str, values: list[float]) -> list[str]:
    metric = BUILTIN_METRICS.by_name(metric_name)
    commits = [
        CommitRow(
            date=f"2026-11-0{i + 1}T00:00:00Z",
            hash=f"{i:040x}",
            short=f"{i:08x}",
            subject=f"step {i}",
        )
        for i in range(len(values))
    ]
    points = [
        Point(commit=c.hash, value=v, delta=None if i == 0 else v - values[i - 1])
        for i, (c, v) in enumerate(zip(commits, values, strict=True))
    ]
    series = MetricSeries(direction="lower", label=metric.label, metric=metric.name, points=points)
    chart = series_chart(series, metric, commits, {c.hash: c for c in commits})
    # The value axis: the tick labels right-aligned left of the plot.
    return [
        t.text
        for t in chart.texts
        if t.css == "tick" and t.anchor == "end" and not t.text.startswith(commits[-1].short)
    ]


def test_an_integer_metric_has_integer_ticks() -> None:
    # Subgraphs 3 -> 4 once showed 2.92, 3.30667, 3.69333, 4.08.
    ticks = _chart_ticks("subgraphs", [3, 4, 4])
    assert ticks and all(t.isdigit() for t in ticks), ticks
    assert [int(t) for t in ticks] == sorted({int(t) for t in ticks})


def test_a_count_axis_has_round_ticks() -> None:
    ticks = _chart_ticks("flops", [1_234_567, 1_900_000])
    assert ticks == ["1 MFLOPs", "1.2 MFLOPs", "1.4 MFLOPs", "1.6 MFLOPs", "1.8 MFLOPs", "2 MFLOPs"]


@pytest.mark.parametrize(
    ("lo", "hi", "integer", "expected"),
    [
        (0.0, 1.0, False, [0.0, 0.2, 0.4, 0.6, 0.8, 1.0]),
        (2.92, 4.08, True, [2.0, 3.0, 4.0, 5.0]),
        (2.92, 4.08, False, [2.5, 3.0, 3.5, 4.0, 4.5]),
        (0.0, 2.0, True, [0.0, 1.0, 2.0]),  # never a step under 1 for an integer
        (5.0, 5.0, False, [5.0]),
    ],
)
def test_nice_ticks_are_one_two_or_five_times_a_power_of_ten(
    lo: float, hi: float, integer: bool, expected: list[float]
) -> None:
    ticks = nice_ticks(lo, hi, integer=integer)
    assert ticks == pytest.approx(expected)
    assert ticks[0] <= lo and ticks[-1] >= hi
    if len(ticks) > 1:
        step = ticks[1] - ticks[0]
        mantissa = step / 10 ** math.floor(math.log10(step))
        assert round(mantissa, 9) in (1, 2, 5)
