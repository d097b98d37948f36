"""Integration helpers: a pytester project whose models are fakes with costs read from a file.

``fake:<key>`` models are profiled by a ``pytest_modelprof_profile`` hook in the project's
conftest: their costs come from ``costs.json`` (so a test can "change the model" between runs)
and every profiling call is appended to ``calls.log`` (so a test can see the session cache).
Real-engine tests use tiny ``nn.Module``s instead and carry their own files; a model source
several test files write is kept once, at the end of this module.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

FAKE_ENGINE = """
import json
from pathlib import Path

import pytest

from pytest_modelprof.machines import GENERIC
from pytest_modelprof.schema import CaptureInfo, Environment, LayerStats, ModelProfile, TensorSpec

ROOT = Path(__file__).parent


def _layer(name, flops):
    return LayerStats(
        name=name, type="Conv2d", calls=1, flops=flops, macs=flops // 2, params=0,
        bytes_read=flops // 20, bytes_written=flops // 20, traffic=flops // 10,
        arithmetic_intensity=10.0, bottleneck="compute-bound",
    )


@pytest.hookimpl
def pytest_modelprof_profile(config, request):
    if not (isinstance(request.model, str) and request.model.startswith("fake:")):
        return None
    key = request.model[len("fake:"):]
    costs = json.loads((ROOT / "costs.json").read_text())[key]
    with (ROOT / "calls.log").open("a") as log:
        log.write(f"{key} {request.input_shape}\\n")
    flops, params, memory = costs["flops"], costs.get("params", 1000), costs.get("memory", 100000)
    layers = [_layer(name, f) for name, f in sorted(costs.get("layers", {"body": flops}).items())]
    return ModelProfile(
        model=key,
        inputs=[TensorSpec(shape=list(request.input_shape or (1, 3, 8, 8)), dtype="float32")],
        capture=CaptureInfo(mode="meta", requested="auto", reason="fake"),
        environment=Environment(
            torch_version="0.0-fake", python_version="3", platform="any",
            device=request.device or "cpu", dtype="float32",
        ),
        machine=GENERIC,
        total_flops=flops, total_macs=flops // 2, total_params=params,
        param_bytes=params * 4, buffer_bytes=0, activation_bytes=memory,
        total_traffic=memory, peak_activation_bytes=costs.get("peak", memory // 2),
        arithmetic_intensity=costs.get("ai", flops / memory), num_ops=len(layers),
        op_breakdown=[], layers=layers,
    )
"""


class Project:
    """A pytester project with the fake engine; ``costs`` maps fake model keys to numbers."""

    def __init__(self, pytester: pytest.Pytester) -> None:
        self.pytester = pytester
        self.root = Path(pytester.path)
        pytester.makeconftest(FAKE_ENGINE)
        self.set_costs(tiny={"flops": 1_000_000})

    def set_costs(self, **costs: dict[str, Any]) -> None:
        (self.root / "costs.json").write_text(json.dumps(costs))

    def calls(self) -> list[str]:
        log = self.root / "calls.log"
        return log.read_text().splitlines() if log.exists() else []

    def baselines(self, directory: str = "baselines") -> dict[str, bytes]:
        base = self.root / directory
        return {
            p.relative_to(base).as_posix(): p.read_bytes() for p in sorted(base.rglob("*.json"))
        }

    def run(self, *args: str) -> pytest.RunResult:
        return self.pytester.runpytest(*args)


def custom_op(qualname: str, name: str) -> str:
    """Source of a custom op without a cost formula (a clone, with a fake kernel), for the
    model files the integration tests write: ``custom_op("mylib::attn", "attn")``."""
    return f"""
@torch.library.custom_op("{qualname}", mutates_args=())
def {name}(x: torch.Tensor) -> torch.Tensor:
    return x.clone()


@{name}.register_fake
def _(x):
    return torch.empty_like(x)
"""


# -- model sources several test files write into their projects ----------------------------------

#: ``Broken()``: one layer, then the model's own error (``ValueError: the model's own bug``).
BROKEN_MODEL = """
import torch.nn as nn


class Broken(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 8)

    def forward(self, x):
        x = self.fc(x)
        raise ValueError("the model's own bug")
"""

#: ``Net()``: a Linear(64, 64) that first spins ``EXTRA_MS`` milliseconds, read from
#: ``extra_ms.txt`` beside the test file (a busy-wait, not a sleep, like real work).
TIMED_MODEL = """
import pathlib
import time

import torch.nn as nn

EXTRA_MS = float(pathlib.Path(__file__).with_name("extra_ms.txt").read_text())


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(64, 64)

    def forward(self, x):
        if EXTRA_MS:  # an injected slowdown: a busy-wait, not a sleep, like real work
            end = time.perf_counter() + EXTRA_MS / 1000
            while time.perf_counter() < end:
                pass
        return self.fc(x)
"""
