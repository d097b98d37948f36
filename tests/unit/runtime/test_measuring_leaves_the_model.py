"""Measuring memory or time of a training step leaves the user's model and optimizer as they
were: weights, buffers, gradients and a given optimizer's state; and the timing settings that
are refused say which value."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from pytest_modelprof.errors import MeasurementError, SettingsError
from pytest_modelprof.runtime.memory import measure_memory
from pytest_modelprof.runtime.timing import (
    PerfCounterTimer,
    benchmark_function,
    quantile,
    summarize,
    time_training_step,
)


def _net() -> nn.Sequential:
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(8, 16), nn.BatchNorm1d(16), nn.ReLU(), nn.Linear(16, 2))


def _state(model: nn.Module) -> dict[str, torch.Tensor]:
    return {k: v.detach().clone() for k, v in model.state_dict().items()}


def test_a_memory_measured_step_restores_a_given_optimizer_and_the_weights() -> None:
    net, x = _net(), torch.randn(4, 8)
    opt = torch.optim.Adam(net.parameters())
    net(x).sum().backward()
    opt.step()  # the user's optimizer already holds moments
    opt.zero_grad(set_to_none=True)
    moments = {
        k: {n: t.clone() for n, t in v.items() if torch.is_tensor(t)}
        for k, v in opt.state_dict()["state"].items()
    }
    before = _state(net)
    stats = measure_memory(net, x, mode="training_step", optimizer=opt)
    assert stats.breakdown["optimizer_state"] > 0
    after_state = opt.state_dict()["state"]
    for k, saved in moments.items():
        for name, tensor in saved.items():
            assert torch.equal(after_state[k][name], tensor), (k, name)
    for key, value in before.items():
        assert torch.equal(value, _state(net)[key]), key  # weights and BN statistics
    assert all(p.grad is None for p in net.parameters())


def test_a_timed_step_with_an_optimizer_factory_leaves_the_model_untouched() -> None:
    net, x = _net(), torch.randn(4, 8)
    before = _state(net)
    made: list[torch.optim.Optimizer] = []

    def factory(params: list[nn.Parameter]) -> torch.optim.Optimizer:
        made.append(torch.optim.SGD(params, lr=0.5))
        return made[-1]

    stats = time_training_step(net, x, optimizer=factory, rounds=2, warmup=1)
    assert stats.rounds == 2 and len(made) == 1
    for key, value in before.items():
        assert torch.equal(value, _state(net)[key]), key


def test_a_timer_with_a_sync_calls_it_around_the_timed_call() -> None:
    events: list[str] = []
    timer = PerfCounterTimer(sync=lambda: events.append("sync"))
    timer.time(lambda: events.append("call"))
    assert events == ["sync", "call", "sync"]


def test_refused_timing_values_are_named() -> None:
    with pytest.raises(SettingsError, match="warmup must be >= 0, got -1"):
        benchmark_function(lambda: None, rounds=1, warmup=-1)
    with pytest.raises(MeasurementError, match="quantile of no values"):
        quantile([], 0.5)
    with pytest.raises(SettingsError, match=r"q must be in \[0, 1\], got 1.5"):
        quantile([1.0], 1.5)


def test_a_summary_describes_itself_in_one_line() -> None:
    stats = summarize([4.0, 1.0, 3.0, 2.0, 10.0])
    # sorted 1 2 3 4 10: median 3, IQR 4 - 2 = 2
    assert stats.describe() == "3 ms (median; IQR 2, min 1, max 10, 5 rounds)"
