"""``bench``: the document's keys, invariants of its figures, and the model left untouched.

No test asserts how fast anything ran; timings only have to be ordered (min <= median <= max).
"""

from __future__ import annotations

import io
import json
from typing import Any

import pytest
import torch
import torchvision
from torch import nn

from pytest_modelprof.optimizers import OPTIMIZER_ARGS, build_optimizer
from pytest_modelprof.profile import profile_model
from pytest_modelprof.progress import StderrProgress
from pytest_modelprof.runtime.bench import (
    bench,
    bench_model,
    hardware_info,
    with_batch,
)
from pytest_modelprof.runtime.bench_document import BenchReport, BenchRun
from pytest_modelprof.runtime.memory import storage_bytes

SHAPE = (2, 3, 32, 32)  # batch 2: batch norm in train mode needs two values per channel
PHASES = ("forward", "backward", "training_step")
STAT_KEYS = {"mean_ms", "std_ms", "min_ms", "max_ms", "median_ms", "rounds"}


@pytest.fixture(scope="module")
def resnet18_run() -> BenchRun:
    stages: list[str] = []
    run = bench("resnet18", input_shape=SHAPE, rounds=3, warmup=1, threads=1, module_rounds=2,
                progress=lambda stage, done, total: stages.append(stage))
    assert stages == ["forward", "backward", "training step", "memory", "flops",
                      "module times"]
    return run


def test_the_document_has_exactly_the_published_keys(resnet18_run: BenchRun) -> None:
    doc = json.loads(resnet18_run.report.to_json())
    assert set(doc) == {"runtime", "memory", "flops", "hardware", "timestamp"}
    assert set(doc["runtime"]) == set(PHASES)
    for phase in PHASES:
        assert set(doc["runtime"][phase]) == STAT_KEYS
    assert set(doc["memory"]) == {"peak_bytes", "breakdown"}
    assert set(doc["memory"]["breakdown"]) == {"parameters", "gradients", "optimizer_state",
                                               "activations"}
    assert set(doc["flops"]) == {"total", "breakdown"}
    assert set(doc["hardware"]) == {"cpu", "cores", "torch", "cuda_available", "gpu_name",
                                    "gpu_memory_bytes"}
    # It reads back, and writes the same text again (floats are rounded once, on writing).
    text = resnet18_run.report.to_json()
    assert BenchReport.model_validate_json(text).to_json() == text


def test_timings_are_ordered_and_count_the_rounds(resnet18_run: BenchRun) -> None:
    runtime = resnet18_run.report.runtime
    for phase in PHASES:
        s = getattr(runtime, phase)
        assert s.rounds == 3
        assert 0 < s.min_ms <= s.median_ms <= s.max_ms
        assert s.min_ms <= s.mean_ms <= s.max_ms
        assert s.std_ms >= 0


def test_memory_breakdown_adds_up_to_the_peak(resnet18_run: BenchRun) -> None:
    model = torchvision.models.resnet18(weights=None)
    weights = storage_bytes(list(model.parameters()))
    buffers = storage_bytes(list(model.buffers()))
    mem = resnet18_run.report.memory
    b = mem.breakdown
    assert b.parameters + b.gradients + b.optimizer_state + b.activations == mem.peak_bytes
    assert b.parameters == weights + buffers
    # SGD with momentum keeps one buffer per parameter, created by the untimed first step.
    assert b.optimizer_state == weights
    assert 0 < b.gradients <= weights
    assert b.activations > 0


def test_flops_are_the_counted_forward_flops_by_family(resnet18_run: BenchRun) -> None:
    flops = resnet18_run.report.flops
    assert flops.total == profile_model("resnet18", input_shape=SHAPE).total_flops
    assert sum(flops.breakdown.values()) == flops.total
    assert "conv" in flops.breakdown
    assert all(v > 0 for v in flops.breakdown.values())


def test_hardware_without_a_gpu_and_the_run_facts(resnet18_run: BenchRun) -> None:
    hw = resnet18_run.report.hardware
    assert hw.torch == torch.__version__
    assert hw.cores >= 1 and hw.cpu
    assert hw.cuda_available == torch.cuda.is_available()
    if not torch.cuda.is_available():
        assert hw.gpu_name is None and hw.gpu_memory_bytes is None
    assert (resnet18_run.model, resnet18_run.device, resnet18_run.dtype) == (
        "resnet18", "cpu", "float32")
    assert resnet18_run.input_shapes == [list(SHAPE)]
    assert resnet18_run.modules is not None
    assert resnet18_run.modules.rounds == 2
    assert resnet18_run.report.timestamp.endswith("+00:00")


def test_adam_keeps_two_moments_per_parameter() -> None:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 8))
    weights = storage_bytes(list(model.parameters()))
    doc, modules = bench_model(model, torch.randn(4, 32), rounds=2, warmup=0, optimizer="adam")
    assert modules is None
    b = doc.memory.breakdown
    # exp_avg and exp_avg_sq, plus one scalar step counter per parameter.
    assert 2 * weights <= b.optimizer_state <= 2 * weights + 4 * 64
    assert b.gradients == weights  # the MLP's peak comes with every gradient alive
    assert b.parameters == weights


class _Net(nn.Module):
    """Dropout and batch norm: train-mode state that a benchmark must not leave changed."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(16, 16)
        self.bn = nn.BatchNorm1d(16)
        self.drop = nn.Dropout(0.5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out: torch.Tensor = self.drop(self.bn(self.lin(x)))
        return out


@pytest.mark.parametrize("optimizer", tuple(OPTIMIZER_ARGS))
def test_the_model_is_left_as_it_was(optimizer: Any) -> None:
    torch.manual_seed(0)
    model = _Net().train()
    model.drop.eval()  # a mixed state, to see it restored flag by flag
    x = torch.randn(8, 16)
    before = {k: v.clone() for k, v in model.state_dict().items()}
    flags = [m.training for m in model.modules()]
    rng = torch.get_rng_state()
    bench_model(model, x, rounds=2, warmup=1, optimizer=optimizer, module_rounds=1)
    after = model.state_dict()
    assert all(torch.equal(after[k], v) for k, v in before.items())
    assert [m.training for m in model.modules()] == flags
    assert all(p.grad is None for p in model.parameters())
    assert torch.equal(torch.get_rng_state(), rng)


def test_keyword_inputs_are_benched_and_counted() -> None:
    class Lm(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.emb = nn.Embedding(50, 16)
            self.head = nn.Linear(16, 50)

        def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
            out: torch.Tensor = self.head(self.emb(input_ids))
            return out

    ids = torch.randint(0, 50, (2, 7))
    doc, _ = bench_model(Lm(), {"input_ids": ids}, rounds=2, warmup=0)
    # head: 2 * (2*7) * 16 * 50 multiply-adds, plus one bias add per output (2*7*50)
    assert doc.flops.total == 2 * 14 * 16 * 50 + 14 * 50


def test_batch_replaces_the_first_dimension() -> None:
    assert with_batch((1, 3, 8, 8), 4) == (4, 3, 8, 8)
    assert with_batch((1, 3), None) == (1, 3)
    with pytest.raises(ValueError, match="batch must be >= 1"):
        with_batch((1, 3), 0)


def test_bench_by_name_with_batch_and_builder_kwargs() -> None:
    run = bench("resnet18", input_shape=(1, 3, 32, 32), batch=2, rounds=1, warmup=0,
                num_classes=10)
    assert run.input_shapes == [[2, 3, 32, 32]]
    # fc (512 -> 10) at batch 2: 2 * 2*512*10 multiply-adds, plus 2*10 bias adds
    assert run.report.flops.breakdown["matmul"] == 2 * 2 * 512 * 10 + 2 * 10


def test_optimizers_and_a_bad_name() -> None:
    params = list(nn.Linear(2, 2).parameters())
    kinds = {name: type(build_optimizer(name, params)).__name__ for name in OPTIMIZER_ARGS}
    assert kinds == {"sgd": "SGD", "sgd-momentum": "SGD", "adam": "Adam", "adamw": "AdamW"}
    with pytest.raises(ValueError, match=r"unknown optimizer 'lbfgs' \(the optimizers: sgd, sgd-m"):
        build_optimizer("lbfgs", params)
    with pytest.raises(ValueError, match="unknown optimizer"):
        bench_model(nn.Linear(2, 2), torch.randn(1, 2), optimizer="lbfgs")  # type: ignore[arg-type]


@pytest.mark.parametrize(("model", "match"), [
    (nn.ReLU(), "no trainable parameters"),
    (nn.Linear(2, 2, device="meta"), "meta device"),
])
def test_unmeasurable_models_are_refused_with_the_reason(model: nn.Module, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        bench_model(model, torch.randn(1, 2), rounds=1)


@pytest.mark.parametrize(("kwargs", "match"), [
    ({"rounds": 0}, "rounds must be >= 1"),
    ({"warmup": -1}, "warmup must be >= 0"),
])
def test_bad_counts_name_the_culprit(kwargs: dict[str, Any], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        bench_model(nn.Linear(2, 2), torch.randn(1, 2), **kwargs)


def test_hardware_info_reports_this_torch() -> None:
    hw = hardware_info("cpu")
    assert hw.torch == torch.__version__
    assert hw.cuda_available == torch.cuda.is_available()


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_writes_one_line_per_stage_to_a_log() -> None:
    stream = io.StringIO()
    progress = StderrProgress("bench m", stream)
    for stage, done in (("forward", 0), ("forward", 1), ("backward", 1)):
        progress(stage, done, 3)
    progress.close()
    assert stream.getvalue() == "bench m: forward ...\nbench m: backward ...\n"


def test_progress_redraws_one_line_on_a_terminal() -> None:
    stream = _Tty()
    progress = StderrProgress("bench m", stream)
    progress("forward", 1, 2)
    progress("backward", 2, 2)
    progress.close()
    text = stream.getvalue()
    assert "\n" not in text
    assert text.count("\r") == 4  # two redraws, then the line is blanked and left
    assert "[" + "#" * 20 + "] 2/2" in text
    assert text.endswith("\r")


def test_a_failing_stage_is_named_with_a_hint() -> None:
    from pytest_modelprof.errors import ModelprofError

    # resnet18 at 32 px ends in 1x1 maps: with batch 1, train-mode batch norm has one value.
    with pytest.raises(ModelprofError, match="the backward failed: ValueError: .*larger batch"):
        bench("resnet18", input_shape=(1, 3, 32, 32), rounds=1, warmup=0)


def test_dtype_reaches_weights_and_inputs() -> None:
    run = bench("resnet18", input_shape=SHAPE, dtype="float64", rounds=1, warmup=0)
    model = torchvision.models.resnet18(weights=None)
    state = storage_bytes(list(model.parameters())) + storage_bytes(list(model.buffers()))
    assert run.dtype == "float64"
    # float64 doubles every floating-point weight and buffer; BN's int64 counters stay 8 bytes.
    counters = sum(b.numel() * 8 for b in model.buffers() if b.dtype == torch.int64)
    assert run.report.memory.breakdown.parameters == 2 * (state - counters) + counters
