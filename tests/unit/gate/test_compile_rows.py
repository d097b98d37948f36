"""Compile health through the gate without torch: hand-built documents, real judge and rows."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path

from pytest_modelprof.compile.gate import compile_wanted
from pytest_modelprof.compile_health import BreakReason, CompileHealth
from pytest_modelprof.gate.evaluate import Outcome, evaluate
from pytest_modelprof.gate.limits import Limits
from pytest_modelprof.gate.settings import SessionSettings
from pytest_modelprof.schema import ModelProfile

MakeProfile = Callable[..., ModelProfile]
NODE = "tests/test_m.py::test_net"
BRANCH = BreakReason(reason="Unsupported Tensor.item() call", location="pkg/model.py:12")


def health(*breaks: BreakReason, compile_time: float | None = None) -> CompileHealth:
    return CompileHealth(
        graphs=len(breaks) + 1,
        graph_breaks=len(breaks),
        break_reasons=list(breaks),
        ops_per_graph=[3] * (len(breaks) + 1),
        recompiles=0,
        input_shapes=[[[2, 8]]],
        dynamic=None,
        kernels=4 if compile_time is not None else None,
        compile_time=compile_time,
    )


def run(
    profile: ModelProfile, tmp_path: Path, limits: Mapping[str, object], *, update: bool = False
) -> Outcome:
    settings = SessionSettings(baseline_dir=tmp_path / "b", update=update)
    return evaluate(
        profile,
        nodeid=NODE,
        name=None,
        limits=Limits().with_values(limits, "marker on test_net"),
        session=settings,
        rootdir=tmp_path,
        evidence={"compile": profile.compile_health} if profile.compile_health else None,
    )


def test_which_limits_switch_compile_analysis_on() -> None:
    assert compile_wanted(frozenset({"flops"})) == (False, False)
    assert compile_wanted(frozenset({"graph_breaks"})) == (True, False)
    assert compile_wanted(frozenset({"recompiles", "kernels"})) == (True, True)
    assert compile_wanted(frozenset({"compile_time"})) == (True, True)


def test_the_budget_names_the_break_without_a_baseline(
    tmp_path: Path, make_profile: MakeProfile
) -> None:
    profile = make_profile(compile_health=health(BRANCH))
    out = run(profile, tmp_path, {"max_graph_breaks": 0}, update=True)
    assert out.failure is not None  # a budget holds while updating, too
    assert "graph breaks: 1 is over budget max_graph_breaks=0" in out.failure
    assert "new graph break: pkg/model.py:12: Unsupported Tensor.item() call" in out.failure
    (row,) = [c for c in out.record.checks if c.metric == "graph_breaks"]
    assert row.detail["new_breaks"] == [BRANCH.model_dump()]


def test_the_delta_names_only_the_breaks_the_baseline_lacks(
    tmp_path: Path, make_profile: MakeProfile
) -> None:
    old = BreakReason(reason="Data dependent operator", location="pkg/anchors.py:5")
    limits = {"max_graph_breaks_delta": 0}
    assert (
        run(make_profile(compile_health=health(old)), tmp_path, limits, update=True).failure is None
    )
    out = run(make_profile(compile_health=health(old, BRANCH)), tmp_path, limits)
    assert out.failure is not None
    assert "graph breaks: 1 \u2192 2" in out.failure
    assert "new graph break since the baseline: pkg/model.py:12:" in out.failure
    assert "anchors.py" not in out.failure.split("graph breaks:")[1].split("\n")[0]
    (row,) = [c for c in out.record.checks if c.metric == "graph_breaks"]
    assert row.verdict == "regressed" and row.detail["baseline_graphs"] == 2
    # The same number of breaks, one moved: the count holds, so the gate passes.
    moved = BreakReason(reason="Data dependent operator", location="pkg/anchors.py:7")
    assert run(make_profile(compile_health=health(moved)), tmp_path, limits).failure is None


def test_compile_time_warns_unless_timing_verdicts_fail(
    tmp_path: Path, make_profile: MakeProfile
) -> None:
    limits: dict[str, object] = {"max_compile_time_delta": "10%"}
    run(make_profile(compile_health=health(compile_time=10.0)), tmp_path, limits, update=True)
    slow = make_profile(compile_health=health(compile_time=20.0))
    out = run(slow, tmp_path, limits)
    assert out.failure is None
    assert any("compile time" in w and "timing_verdicts" in w for w in out.record.warnings)
    strict = run(slow, tmp_path, {**limits, "timing_verdicts": "fail"})
    assert strict.failure is not None and "compile time: 10 s \u2192 20 s" in strict.failure


def test_a_compile_limit_without_a_measurement_is_unmeasured(
    tmp_path: Path, make_profile: MakeProfile
) -> None:
    out = run(make_profile(), tmp_path, {"max_graph_breaks": 0}, update=True)
    assert out.failure is not None and "graph breaks" in out.failure
    assert "does not measure it" in out.failure


def test_an_unmeasured_graph_break_budget_fails_with_or_without_a_baseline(
    tmp_path: Path, make_profile: MakeProfile
) -> None:
    # Seen before: max_graph_breaks=0, a baseline that holds the metric, and a
    # run that did not measure it (no compile health) used to be "missing" and pass.
    measured = make_profile(compile_health=health())
    assert run(measured, tmp_path, {"max_graph_breaks": 0}, update=True).failure is None
    unmeasured = make_profile()
    with_baseline = run(unmeasured, tmp_path, {"max_graph_breaks": 0})
    row = next(c for c in with_baseline.comparison.checks if c.metric == "graph_breaks")
    assert row.verdict == "unmeasured"
    assert with_baseline.failure is not None and "graph breaks" in with_baseline.failure
    without = run(unmeasured, tmp_path / "fresh", {"max_graph_breaks": 0})
    assert without.failure is not None and "graph breaks" in without.failure
