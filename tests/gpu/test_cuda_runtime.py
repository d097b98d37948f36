"""CUDA paths of the runtime package: event timer, allocator-based memory, normalised timing.

Run on a machine with a GPU: ``python -m pytest tests/gpu -q``. Set ``MODELPROF_GPU_RECORD``
to a file path to keep the measured numbers (JSON lines) for the record.
Skipped cleanly when ``torch.cuda.is_available()`` is False.
"""

from __future__ import annotations

import torch
import torchvision
from gpu_support import GPU, record
from torch import nn

from pytest_modelprof.runtime.calibration import measure_forward_normalised
from pytest_modelprof.runtime.memory import measure_memory, storage_bytes
from pytest_modelprof.runtime.noise import (
    compare_timings,
)
from pytest_modelprof.runtime.timing import (
    CudaEventTimer,
    time_backward,
    time_forward,
    time_training_step,
    timer_for,
)

pytestmark = GPU




def _mlp() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(256, 1024), nn.ReLU(), nn.Linear(1024, 256)).cuda()


def test_event_timer_measures_gpu_work() -> None:
    timer = timer_for("cuda")
    assert isinstance(timer, CudaEventTimer)
    a = torch.randn(2048, 2048, device="cuda")
    ms = timer.time(lambda: a @ a)
    assert ms > 0.0
    record("event_timer", matmul_2048_ms=ms)


def test_forward_backward_step_on_cuda() -> None:
    model, x = _mlp(), torch.randn(64, 256, device="cuda")
    fwd = time_forward(model, x, rounds=20, warmup=3)
    bwd = time_backward(model, x, rounds=10, warmup=2)
    step = time_training_step(model, x, rounds=10, warmup=2)
    assert fwd.timer == bwd.timer == step.timer == "cuda_event"
    assert min(fwd.min, bwd.min, step.min) > 0
    record("timings", forward_ms=fwd.median, backward_ms=bwd.median, step_ms=step.median)


def test_cuda_memory_breakdown_of_a_training_step() -> None:
    model, x = _mlp(), torch.randn(64, 256, device="cuda")
    params = storage_bytes(list(model.parameters()))
    stats = measure_memory(model, x, mode="training_step",
                           optimizer=lambda ps: torch.optim.Adam(ps))
    assert stats.method == "cuda"
    assert stats.breakdown["parameters"] == params
    assert stats.breakdown["gradients"] == params
    assert stats.breakdown["optimizer_state"] >= 2 * params
    assert stats.peak_bytes == sum(stats.breakdown.values())
    assert all(p.grad is None for p in model.parameters())
    record("memory_training_step", **stats.breakdown, peak=stats.peak_bytes)


def test_cuda_peak_repeats_and_bounds_the_tracked_figure() -> None:
    model = torchvision.models.resnet18(weights=None).cuda()
    x = torch.randn(4, 3, 128, 128, device="cuda")
    runs = [measure_memory(model, x) for _ in range(3)]
    assert runs[0].peak_new_bytes == runs[1].peak_new_bytes == runs[2].peak_new_bytes
    tracked = measure_memory(model, x, method="tracked")
    # The allocator also sees kernel workspaces and rounds blocks up to 512 B.
    assert tracked.peak_new_bytes <= runs[0].peak_new_bytes
    record("memory_forward_resnet18", cuda_peak_new=runs[0].peak_new_bytes,
            tracked_peak_new=tracked.peak_new_bytes)


def test_normalised_timing_on_cuda() -> None:
    model, x = _mlp(), torch.randn(64, 256, device="cuda")
    a = measure_forward_normalised(model, x, rounds=30)
    b = measure_forward_normalised(model, x, rounds=30)
    assert a.model.timer == "cuda_event"
    verdict = compare_timings(b, a)
    record("normalised", normalised=a.normalised, slowdown=verdict.slowdown,
            verdict=verdict.verdict)
    assert verdict.verdict != "regressed" or verdict.slowdown < 0.5
