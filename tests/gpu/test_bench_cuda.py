"""CUDA paths of ``bench`` and the per-module timer: CUDA events, the caching allocator, the GPU.

Run on a machine with a GPU: ``python -m pytest tests/gpu -q`` (``MODELPROF_GPU_RECORD=file``
keeps the figures, as in test_cuda_runtime.py). Skipped cleanly without CUDA.
"""

from __future__ import annotations

import json

import pytest
import torch
from gpu_support import GPU, record
from torch import nn

from pytest_modelprof.runtime.bench import bench, bench_model
from pytest_modelprof.runtime.memory import storage_bytes
from pytest_modelprof.runtime.module_timing import time_modules

pytestmark = GPU




def test_bench_resnet18_on_cuda() -> None:
    run = bench("resnet18", input_shape=(2, 3, 64, 64), device="cuda", rounds=5, warmup=2,
                optimizer="adam", module_rounds=3)
    doc = run.report
    assert doc.hardware.cuda_available
    assert doc.hardware.gpu_name == torch.cuda.get_device_name(0)
    assert doc.hardware.gpu_memory_bytes is not None and doc.hardware.gpu_memory_bytes > 0
    for phase in (doc.runtime.forward, doc.runtime.backward, doc.runtime.training_step):
        assert 0 < phase.min_ms <= phase.median_ms <= phase.max_ms
    b = doc.memory.breakdown
    assert b.parameters + b.gradients + b.optimizer_state + b.activations == doc.memory.peak_bytes
    assert b.optimizer_state >= 2 * b.gradients  # Adam: two moments per parameter
    assert run.modules is not None and run.modules.timer == "cuda_event"
    assert run.modules.device.startswith("cuda")
    record("bench_resnet18", forward_ms=doc.runtime.forward.median_ms,
            backward_ms=doc.runtime.backward.median_ms,
            step_ms=doc.runtime.training_step.median_ms, peak=doc.memory.peak_bytes)


def test_module_times_on_cuda_partition_the_forward() -> None:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(256, 1024), nn.ReLU(), nn.Linear(1024, 256)).cuda()
    times = time_modules(model, torch.randn(64, 256, device="cuda"), rounds=5, warmup=2)
    assert times.timer == "cuda_event"
    assert {m.path for m in times.modules} == {"", "0", "1", "2"}
    assert sum(m.self_ms for m in times.modules) == pytest.approx(times.forward_ms, rel=1e-6)
    for m in times.modules:
        assert 0 <= m.self_ms <= m.forward_ms + 1e-6


def test_cuda_memory_breakdown_of_bench_sgd() -> None:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(256, 1024), nn.ReLU(), nn.Linear(1024, 256)).cuda()
    weights = storage_bytes(list(model.parameters()))
    doc, _ = bench_model(model, torch.randn(64, 256, device="cuda"), rounds=3, warmup=1)
    b = doc.memory.breakdown
    assert b.parameters == weights
    assert b.optimizer_state == weights  # one momentum buffer per parameter
    assert b.gradients == weights
    assert all(p.grad is None for p in model.parameters())
    record("bench_mlp_memory", **b.model_dump(), peak=doc.memory.peak_bytes)


def test_bench_command_on_cuda(capsys: pytest.CaptureFixture[str]) -> None:
    from pytest_modelprof.cli import main

    code = main(["bench", "resnet18", "--device", "cuda", "--input-shape", "1,3,64,64",
                 "--rounds", "5", "--json"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    doc = json.loads(captured.out)
    assert doc["hardware"]["gpu_name"] == torch.cuda.get_device_name(0)
    assert sum(doc["memory"]["breakdown"].values()) == doc["memory"]["peak_bytes"]


def test_timed_graph_on_cuda(capsys: pytest.CaptureFixture[str]) -> None:
    from pytest_modelprof.cli import main

    code = main(["graph", "resnet18", "--timed", "--device", "cuda", "--format", "json",
                 "--input-shape", "1,3,64,64", "--rounds", "3"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    nodes = [n for n in json.loads(captured.out)["nodes"] if n["kind"] == "module"]
    assert nodes and all(n["forward_ms"] is not None for n in nodes)
