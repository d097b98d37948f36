"""A hand-built :class:`ModelProfile` factory: the gate's unit tests need no torch."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from pytest_modelprof.machines import GENERIC
from pytest_modelprof.schema import (
    CaptureInfo,
    Environment,
    LayerStats,
    ModelProfile,
    TensorSpec,
)

MakeProfile = Callable[..., ModelProfile]
MakeLayer = Callable[..., LayerStats]


def layer(name: str, flops: int, *, type: str = "Conv2d", params: int = 0) -> LayerStats:
    """One layer row; MACs are half the FLOPs and memory is a tenth, to keep numbers simple."""
    return LayerStats(
        name=name,
        type=type,
        calls=1,
        flops=flops,
        macs=flops // 2,
        params=params,
        bytes_read=flops // 20,
        bytes_written=flops // 20,
        traffic=flops // 10,
        arithmetic_intensity=10.0,
        bottleneck="compute-bound",
    )


def build_profile(
    *,
    model: str = "tiny",
    flops: int = 1_000_000,
    params: int = 1_000,
    memory: int = 100_000,
    peak: int = 50_000,
    ai: float | None = None,
    layers: list[LayerStats] | None = None,
    **overrides: Any,
) -> ModelProfile:
    """A consistent profile: MACs = FLOPs / 2, AI = FLOPs / memory unless given."""
    if layers is None:
        layers = [layer("conv1", flops * 3 // 4, params=params), layer("fc", flops // 4)]
    fields: dict[str, Any] = dict(
        model=model,
        inputs=[TensorSpec(shape=[1, 3, 8, 8], dtype="float32")],
        capture=CaptureInfo(mode="meta", requested="auto", reason="hand-built"),
        environment=Environment(
            torch_version="2.15.0",
            python_version="3.11.0",
            platform="linux",
            device="cpu",
            dtype="float32",
        ),
        machine=GENERIC,
        total_flops=flops,
        total_macs=flops // 2,
        total_params=params,
        param_bytes=params * 4,
        buffer_bytes=0,
        activation_bytes=memory - params * 4,
        total_traffic=memory,
        peak_activation_bytes=peak,
        arithmetic_intensity=flops / memory if ai is None else ai,
        num_ops=len(layers),
        op_breakdown=[],
        layers=layers,
    )
    fields.update(overrides)
    return ModelProfile(**fields)


@pytest.fixture
def make_profile() -> MakeProfile:
    """``make_profile(flops=..., params=..., layers=[...])`` -> a hand-built ModelProfile."""
    return build_profile


@pytest.fixture
def make_layer() -> MakeLayer:
    """``make_layer("conv1", flops, type="Conv2d", params=0)`` -> a LayerStats row."""
    return layer
