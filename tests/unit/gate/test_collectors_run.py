"""Which measurements the gate runs for a test, and what each gives: nothing without a limit
that asks, a sweep's points for a growth limit, fvcore's count beside ours, and errors that
name what to change."""

from __future__ import annotations

import dataclasses

import pytest
from torch import nn

from pytest_modelprof.errors import ModelprofError
from pytest_modelprof.gate.collect import collect, run_fvcore, run_sweep
from pytest_modelprof.gate.limits import Limits
from pytest_modelprof.gate.request import ProfileRequest

pytest.importorskip("fvcore")


def _mlp() -> nn.Module:
    return nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4))


def test_without_a_limit_that_asks_nothing_is_measured() -> None:
    request = ProfileRequest(_mlp(), (2, 8))
    assert collect(request, Limits(), sweep={"batch": [1, 2]}) == {}


def test_a_growth_limit_sweeps_each_value_of_the_axis() -> None:
    limits = Limits().with_values({"max_flops_growth": 1.1}, "marker")
    evidence = collect(ProfileRequest(_mlp(), (1, 8)), limits, sweep={"batch": [1, 2, 4]})
    (series,) = evidence["sweep"]["series"]
    assert series["axis"] == "batch"
    assert [p["value"] for p in series["points"]] == [1, 2, 4]
    flops = [p["flops"] for p in series["points"]]
    assert flops[1] == 2 * flops[0] and flops[2] == 4 * flops[0]  # linear in the batch
    assert series["fits"]["flops"]["exponent"] == pytest.approx(1.0)


def test_an_axis_that_rebuilds_the_model_needs_a_model_name() -> None:
    limits = Limits().with_values({"max_flops_growth": 1.1}, "marker")
    with pytest.raises(ModelprofError, match="sweep axis 'width' rebuilds the model"):
        run_sweep(ProfileRequest(_mlp(), (1, 8)), {"width": [8, 16]}, limits)


def test_fvcore_counts_beside_ours() -> None:
    limits = dataclasses.replace(Limits(), fvcore=True)
    evidence = run_fvcore(ProfileRequest(_mlp(), (2, 8)), limits)
    assert evidence is not None and evidence.error is None
    assert evidence.ours_macs == evidence.fvcore_macs == 2 * (8 * 16 + 16 * 4)


def test_fvcore_with_several_input_shapes_says_to_pass_inputs() -> None:
    limits = dataclasses.replace(Limits(), fvcore=True)
    evidence = run_fvcore(ProfileRequest(_mlp(), ((2, 8), (2, 8))), limits)
    assert evidence is not None
    assert evidence.error == (
        "fvcore=True: the fvcore cross-check takes one input shape; pass inputs= instead"
    )
    assert run_fvcore(ProfileRequest(_mlp(), (2, 8)), Limits()) is None  # not asked
