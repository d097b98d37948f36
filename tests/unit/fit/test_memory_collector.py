"""The memory metrics' collector: a gated test's step estimated as ``modelprof memory`` does.

The collector measures only the steps a limit names, says which step it estimated (the
settings a baseline keeps), and the marker's ``dtype=`` means a pure low-precision step.
"""

from __future__ import annotations

import torch
from torch import nn

from pytest_modelprof.baseline.collector import Measure
from pytest_modelprof.fit import StepOptions, estimate_memory
from pytest_modelprof.fit.gate import MEMORY_COLLECTOR, request_options, sweep_memory
from pytest_modelprof.gate.limits import Limits
from pytest_modelprof.gate.request import ProfileRequest


def _mlp() -> nn.Module:
    return nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4))


def _measure(request: ProfileRequest, *limited: str) -> dict[str, object]:
    call = Measure(request=request, limits=Limits(), limited=frozenset(limited))
    assert MEMORY_COLLECTOR.wanted(call) == bool(limited)
    evidence = MEMORY_COLLECTOR.measure(call)
    return dict(evidence) if evidence is not None else {}


def test_only_the_limited_step_is_estimated_with_its_components() -> None:
    model = _mlp()
    request = ProfileRequest(model, input_shape=(2, 16), step=(("optimizer", "sgd"),))
    got = _measure(request, "train_memory_gradients")
    expected = estimate_memory(model, input_shape=(2, 16), options=StepOptions(optimizer="sgd"))
    assert got["train_memory"] == expected.peak_bytes
    assert set(got) == {
        "train_memory",
        "train_memory_parameters",
        "train_memory_gradients",
        "train_memory_optimizer_state",
        "train_memory_activations",
        "train_memory_transient",
        "train_settings",
    }  # no inference figures: no limit asked for them
    # 16*32 + 32 + 32*4 + 4 = 676 fp32 parameters, 4 bytes each, and as many gradients.
    assert got["train_memory_parameters"] == got["train_memory_gradients"] == 676 * 4
    settings = got["train_settings"]
    assert isinstance(settings, dict)
    assert settings["optimizer"] == "sgd:foreach"
    assert settings["precision"] == "fp32" and settings["devices"] == 1
    values = MEMORY_COLLECTOR.values(got)
    assert values["train_memory"] == expected.peak_bytes


def test_no_limit_on_a_memory_metric_measures_nothing() -> None:
    assert _measure(ProfileRequest(_mlp(), input_shape=(2, 16))) == {}
    call = Measure(request=ProfileRequest(_mlp(), input_shape=(2, 16)), limits=Limits())
    assert MEMORY_COLLECTOR.measure(call) is None


def test_inference_uses_the_test_s_own_tensors_and_a_list_of_shapes_its_first() -> None:
    model = _mlp()
    x = torch.randn(3, 16)
    from_tensors = _measure(ProfileRequest(model, inputs=(x,)), "inference_memory")
    from_shapes = _measure(ProfileRequest(model, input_shape=[(3, 16)]), "inference_memory")
    assert from_tensors["inference_memory"] == from_shapes["inference_memory"]
    assert "inference_memory_gradients" not in from_tensors  # inference keeps no gradients
    assert from_tensors["inference_memory_parameters"] == 676 * 4


def test_the_marker_dtype_means_a_pure_low_precision_step_unless_a_precision_is_named() -> None:
    bf16 = ProfileRequest(_mlp(), input_shape=(2, 16), dtype="bfloat16")
    assert request_options(bf16, "train").precision == "bf16"
    assert request_options(bf16, "inference").precision == "bf16"
    named = ProfileRequest(
        _mlp(), input_shape=(2, 16), dtype="bfloat16", step=(("precision", "bf16-mixed"),)
    )
    assert request_options(named, "train").precision == "bf16-mixed"
    # float64 is no low precision: the step stays fp32.
    wide = ProfileRequest(_mlp(), input_shape=(2, 16), dtype="float64")
    assert request_options(wide, "train").precision == "fp32"
    got = _measure(bf16, "train_memory")
    assert got["train_memory_parameters"] == 676 * 2  # bf16 weights, 2 bytes each


def test_a_sweep_point_is_estimated_for_each_step_field() -> None:
    request = ProfileRequest(_mlp(), input_shape=(2, 16))
    measure = sweep_memory(request, ["train_memory", "inference_memory"])
    small, large = _mlp(), nn.Sequential(nn.Linear(16, 64), nn.ReLU(), nn.Linear(64, 4))
    x = torch.randn(2, 16)
    a, b = measure(small, (x,)), measure(large, (x,))
    assert set(a) == {"train_memory", "inference_memory"}
    assert a["train_memory"] > a["inference_memory"]
    assert b["train_memory"] > a["train_memory"]  # more parameters, more of every state
