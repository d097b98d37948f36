"""Timing statistics on synthetic samples, and the measuring loops with a scripted clock.

No test here asserts on wall-clock speed: the clock is a fake that returns fixed numbers.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest
import torch
from torch import nn

from pytest_modelprof.runtime.timing import (
    PerfCounterTimer,
    Timer,
    benchmark_function,
    quantile,
    summarize,
    time_backward,
    time_forward,
    time_training_step,
    timer_for,
)


class ScriptedTimer:
    """Returns 1, 2, 3, ... ms; still calls ``fn`` so side effects happen."""

    name = "scripted"

    def __init__(self) -> None:
        self.calls = 0

    def time(self, fn: Callable[[], object]) -> float:
        fn()
        self.calls += 1
        return float(self.calls)


def test_summarize_hand_computed() -> None:
    stats = summarize([4.0, 1.0, 3.0, 2.0, 10.0], warmup=2, timer="t")
    # sorted 1 2 3 4 10: median 3, q1 at pos 1 -> 2, q3 at pos 3 -> 4, IQR 2
    assert (stats.median, stats.q1, stats.q3, stats.iqr) == (3.0, 2.0, 4.0, 2.0)
    assert (stats.min, stats.max, stats.rounds, stats.warmup) == (1.0, 10.0, 5, 2)
    assert stats.mean == pytest.approx(4.0)
    # squared deviations 0 9 1 4 36 = 50; sample variance 50 / 4 = 12.5
    assert stats.std == pytest.approx(12.5**0.5)
    assert stats.samples == [4.0, 1.0, 3.0, 2.0, 10.0]  # round order kept
    assert stats.unit == "ms"


def test_summarize_single_sample_has_zero_spread() -> None:
    stats = summarize([2.5])
    assert (stats.std, stats.iqr, stats.median) == (0.0, 0.0, 2.5)


@pytest.mark.parametrize("bad", [[], [1.0, float("nan")], [-1.0]])
def test_summarize_rejects_bad_samples(bad: list[float]) -> None:
    with pytest.raises(ValueError):
        summarize(bad)


def test_quantile_interpolates_like_numpy() -> None:
    values = [1.0, 2.0, 4.0, 8.0]
    # position (4 - 1) * 0.5 = 1.5 -> halfway between 2 and 4
    assert quantile(values, 0.5) == 3.0
    assert quantile(values, 0.0) == 1.0 and quantile(values, 1.0) == 8.0
    with pytest.raises(ValueError):
        quantile(values, 1.5)


def test_benchmark_function_warmup_is_untimed() -> None:
    calls: list[int] = []
    timer = ScriptedTimer()
    stats = benchmark_function(lambda: calls.append(1), rounds=4, warmup=3, timer=timer)
    assert len(calls) == 7  # 3 warm-up + 4 timed
    assert timer.calls == 4
    assert stats.samples == [1.0, 2.0, 3.0, 4.0]
    assert stats.timer == "scripted"


def test_rounds_must_be_positive() -> None:
    with pytest.raises(ValueError, match="rounds"):
        benchmark_function(lambda: None, rounds=0)


def test_perf_counter_timer_is_a_timer() -> None:
    timer = PerfCounterTimer()
    assert isinstance(timer, Timer)
    assert timer.time(lambda: None) >= 0.0
    assert timer_for("cpu").name == "perf_counter"


@pytest.fixture
def net() -> Iterator[nn.Sequential]:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 16), nn.Dropout(0.5), nn.BatchNorm1d(16), nn.Linear(16, 2))
    model.train()
    yield model


def _snapshot(model: nn.Module) -> dict[str, torch.Tensor]:
    return {k: v.detach().clone() for k, v in model.state_dict().items()}


def test_time_forward_runs_in_eval_and_restores(net: nn.Module) -> None:
    seen: list[bool] = []
    net.register_forward_hook(lambda m, a, o: seen.append(m.training))
    stats = time_forward(net, torch.randn(4, 8), rounds=3, warmup=1, timer=ScriptedTimer())
    assert stats.rounds == 3 and seen == [False] * 4
    assert net.training  # restored


@pytest.mark.parametrize("which", ["backward", "training_step"])
def test_backward_and_step_leave_the_model_untouched(net: nn.Module, which: str) -> None:
    before = _snapshot(net)
    x = torch.randn(4, 8)
    if which == "backward":
        stats = time_backward(net, x, rounds=2, warmup=1, timer=ScriptedTimer())
    else:
        opt = torch.optim.Adam(net.parameters())
        stats = time_training_step(net, x, optimizer=opt, rounds=2, warmup=1,
                                   timer=ScriptedTimer())
        assert opt.state_dict()["state"] == {}  # the given optimizer's state is restored
    assert stats.rounds == 2
    after = _snapshot(net)
    for key, value in before.items():
        assert torch.equal(value, after[key]), key  # weights and BN statistics
    assert all(p.grad is None for p in net.parameters())
    assert net.training


def test_training_step_keeps_dropout_off(net: nn.Sequential) -> None:
    modes: list[bool] = []
    net[1].register_forward_hook(lambda m, a, o: modes.append(m.training))
    time_training_step(net, torch.randn(4, 8), rounds=1, warmup=0, timer=ScriptedTimer())
    assert modes == [False]
    assert net[1].training and net[0].training


def test_loss_needs_a_differentiable_output() -> None:
    frozen = nn.Linear(2, 2).requires_grad_(False)
    with pytest.raises(ValueError, match="requires grad"):
        time_backward(frozen, torch.randn(1, 2), rounds=1, warmup=0, timer=ScriptedTimer())
