"""Stacked bars of a total's parts: one bar per side on one scale, "the rest" of the total.

Rows are made by hand as the gate writes them (``detail["stack"]`` names the total), so the
figures below are exact: the bar spans 800 units (x 150 to 950) for the larger side's total.
"""

from __future__ import annotations

from pytest_modelprof.baseline.check import Check
from pytest_modelprof.report.stacks import stack_charts
from pytest_modelprof.results.record import ProfileResult

MB = 1_000_000


def _row(
    metric: str, label: str, current: float | None, baseline: float | None, stack: str = ""
) -> Check:
    return Check(
        metric=metric,
        label=label,
        kind="tolerance",
        verdict="ok",
        reason="",
        current=current,
        baseline=baseline,
        current_text="—" if current is None else f"{current / MB:g} MB",
        baseline_text="—" if baseline is None else f"{baseline / MB:g} MB",
        detail={"stack": stack} if stack else {},
    )


def _result(*checks: Check) -> ProfileResult:
    return ProfileResult(nodeid="t.py::test_x", model="m", status="ok", checks=list(checks))


def test_parts_and_the_rest_of_the_total_share_one_scale_baseline_above_current() -> None:
    result = _result(
        _row("train_memory", "train memory", 10 * MB, 5 * MB),
        _row("train_memory_gradients", "train memory: gradients", 4 * MB, 2 * MB, "train_memory"),
        _row("train_memory_parameters", "train memory: parameters", 4 * MB, 2 * MB, "train_memory"),
        _row("flops", "FLOPs", 100.0, 100.0),  # not a part of anything: no bar
    )
    (chart,) = stack_charts(result)
    assert chart.title == "train memory: baseline vs current"
    assert chart.caption == (
        "2 parts and the rest, baseline above current. Hover a segment for its figures."
    )
    assert [item.label for item in chart.legend] == [
        "gradients",
        "parameters",
        "the rest of train memory",
    ]
    baseline = [r for r in chart.rects if r.y == "8"]
    current = [r for r in chart.rects if r.y == "36"]
    # Current 10 MB spans 800; the baseline's 5 MB half of it: 2 MB parts are 160 wide.
    assert [r.width for r in current] == ["320", "320", "160"]
    assert [r.width for r in baseline] == ["160", "160", "80"]
    assert [r.x for r in current] == ["150", "470", "790"]
    assert current[0].title == "gradients: current 4 MB (40.0 % of 10 MB)"
    assert current[2].css == "seg-rest"
    assert [t.text for t in chart.texts] == ["baseline 5 MB", "current 10 MB"]


def test_a_first_run_has_one_bar_and_says_there_is_no_baseline_yet() -> None:
    result = _result(
        _row("inference_memory", "inference memory", 6 * MB, None),
        _row(
            "inference_memory_parameters",
            "inference memory: parameters",
            6 * MB,
            None,
            "inference_memory",
        ),
    )
    (chart,) = stack_charts(result)
    assert chart.caption == "1 parts; no baseline yet. Hover a segment for its figures."
    assert {r.y for r in chart.rects} == {"8"}
    assert [r.width for r in chart.rects] == ["800"]  # the parts fill the total: no rest
    assert [t.text for t in chart.texts] == ["current 6 MB"]


def test_parts_without_their_total_are_summed_and_unmeasured_parts_are_left_out() -> None:
    result = _result(
        _row("a_part", "a part", 3.0, 1.0, "custom_total"),
        _row("b_part", "b part", 1.0, 0.0, "custom_total"),  # nothing at the baseline
        _row("c_part", "c part", None, None, "custom_total"),  # never measured: no segment
        _row("d_part", "d part", None, None, "never_measured"),  # a group of nothing: no chart
    )
    (chart,) = stack_charts(result)
    assert chart.title == "custom_total: baseline vs current"
    assert [item.label for item in chart.legend] == ["a part", "b part"]
    baseline = [r for r in chart.rects if r.y == "8"]
    assert [r.width for r in baseline] == ["200"]  # 1 of the larger side's 4
    # No metric of that name: the sums are printed as plain numbers.
    assert [t.text for t in chart.texts] == ["baseline 1", "current 4"]
