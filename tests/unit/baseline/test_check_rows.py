"""The check row and its texts: a JSON round trip, how a change reads, and compare's rules for a
derived metric and a baseline from another environment."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from pydantic import ValidationError

from pytest_modelprof.baseline.change import DASH, change_text, delta_text, relative_change
from pytest_modelprof.baseline.check import Check
from pytest_modelprof.baseline.compare import Policy, compare
from pytest_modelprof.baseline.document import BaselineDocument
from pytest_modelprof.baseline.metrics import BUILTIN_METRICS
from pytest_modelprof.baseline.tolerance import Relative
from pytest_modelprof.schema import ModelProfile

MakeProfile = Callable[..., ModelProfile]
FLOPS = BUILTIN_METRICS.by_name("flops")


def doc(profile: ModelProfile, **env: str) -> BaselineDocument:
    d = BaselineDocument.from_profile(profile, test="t.py::test_x", name=None, settings={})
    return d.model_copy(update={"environment": d.environment.model_copy(update=env)})


def rows(current: BaselineDocument, baseline: BaselineDocument, policy: Policy) -> dict[str, Check]:
    return {c.metric: c for c in compare(current, baseline, policy).checks}


def test_a_row_survives_its_json_and_refuses_a_field_it_lacks() -> None:
    row = Check(
        metric="flops",
        label="FLOPs",
        kind="budget",
        verdict="regressed",
        reason="2 GFLOPs is over budget",
        current=2e9,
        baseline=1e9,
        hard=True,
        detail={"layers": [{"name": "fc"}]},
    )
    assert Check.from_json(row.to_json()) == row
    with pytest.raises(ValidationError, match="colour"):
        Check.from_json({**row.to_json(), "colour": "red"})
    assert row.failed and row.change == 1.0
    assert not Check(metric="m", label="m", kind="delta", verdict="warning", reason="").failed
    assert Check(metric="m", label="m", kind="delta", verdict="new", reason="").change is None


def test_a_change_from_zero_or_to_nothing() -> None:
    assert relative_change(None, 5.0) is None and relative_change(5.0, None) is None
    assert relative_change(0.0, 0.0) == 0.0
    assert relative_change(3.0, 0.0) == float("inf")
    assert relative_change(-3.0, 0.0) == float("-inf")
    assert relative_change(-1.0, -2.0) == 0.5  # against |baseline|: -2 -> -1 grew


def test_a_tiny_change_also_gives_its_size() -> None:
    assert FLOPS is not None
    # 72,000,000 -> 72,016,400 FLOPs is +0.023 %: both sides print "72 MFLOPs", so the size too.
    assert change_text(FLOPS, 72_016_400, 72_000_000) == "+16.4 KFLOPs, +0.023 %"
    assert change_text(FLOPS, 1_200_000, 1_000_000) == "+20.0 %"
    assert delta_text(FLOPS, 1_200_000, 1_000_000) == "+200 KFLOPs (+20.0 %)"
    assert delta_text(FLOPS, 5, 5) == "0"
    assert delta_text(FLOPS, None, 5) == DASH and delta_text(FLOPS, 5, None) == DASH


def test_a_derived_metric_that_moved_because_its_inputs_improved_passes(
    make_profile: MakeProfile,
) -> None:
    # Intensity = FLOPs / traffic: 1 MFLOPs / 100 KB = 10 -> 0.9 MFLOPs / 100 KB = 9, a 10 %
    # drop (worse for intensity) only because FLOPs fell: no cost grew, so it is no failure.
    before = doc(make_profile(flops=1_000_000, memory=100_000))
    fewer_flops = doc(make_profile(flops=900_000, memory=100_000))
    policy = Policy(tolerances={"intensity": Relative(0.01)}, explicit=frozenset({"intensity"}))
    held = rows(fewer_flops, before, policy)["intensity"]
    assert held.verdict == "ok"
    assert "derived from flops -10.0 %, traffic +0.0 %: no cost grew" in held.reason
    # The same drop from more traffic is a cost that grew: it fails.
    more_traffic = doc(make_profile(flops=1_000_000, memory=111_112))
    assert rows(more_traffic, before, policy)["intensity"].verdict == "regressed"


def test_an_improvement_against_another_environment_only_warns(
    make_profile: MakeProfile,
) -> None:
    # Traffic depends on kernels: a baseline recorded under another torch may differ for that
    # reason alone, so "the baseline could be tighter" is a warning, unless asked to fail.
    before = doc(make_profile(memory=100_000), torch_version="2.0.0")
    after = doc(make_profile(memory=80_000), torch_version="2.14.1")
    row = rows(after, before, Policy())["traffic"]
    assert row.verdict == "warning"
    assert "the baseline could be tighter; environment changed (torch 2.0.0" in row.reason
    strict = rows(after, before, Policy(fail_on_environment=True))["traffic"]
    assert strict.verdict == "improved"
    # Not kernel-dependent: FLOPs improve the same anywhere.
    fewer = doc(make_profile(flops=500_000, memory=100_000), torch_version="2.14.1")
    assert rows(fewer, before, Policy())["flops"].verdict == "improved"
