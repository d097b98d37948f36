"""ProfilingContext puts everything back: training flags, RNG states, threads, grad mode."""

from __future__ import annotations

import random

import numpy as np
import pytest
import torch
from torch import nn

from pytest_modelprof.runtime.context import ProfilingContext


def _model() -> nn.Sequential:
    inner = nn.Sequential(nn.AlphaDropout(0.2), nn.ReLU())
    model = nn.Sequential(nn.Linear(2, 2), nn.Dropout(0.3), inner)
    model.train()
    inner.eval()  # a mixed state must come back exactly as it was
    return model


def _flags(model: nn.Module) -> list[bool]:
    return [m.training for m in model.modules()]


def test_everything_is_restored() -> None:
    model = _model()
    flags = _flags(model)
    random.seed(7)
    np.random.seed(7)
    torch.manual_seed(7)
    py, npy, th = random.getstate(), np.random.get_state(legacy=False), torch.get_rng_state()
    threads, grad = torch.get_num_threads(), torch.is_grad_enabled()
    target = 1 if threads != 1 else 2
    with ProfilingContext(model, seed=0, threads=target, grad=False):
        assert not any(_flags(model))
        assert torch.get_num_threads() == target
        assert not torch.is_grad_enabled()
        random.random(), np.random.rand(), torch.rand(3)  # consume randomness
    assert _flags(model) == flags
    assert random.getstate() == py
    after = np.random.get_state(legacy=False)
    assert np.array_equal(after["state"]["key"], npy["state"]["key"])
    assert after["state"]["pos"] == npy["state"]["pos"]
    assert torch.equal(torch.get_rng_state(), th)
    assert torch.get_num_threads() == threads
    assert torch.is_grad_enabled() == grad


def test_restored_after_an_exception() -> None:
    model = _model()
    flags = _flags(model)
    grad = torch.is_grad_enabled()
    with pytest.raises(RuntimeError, match="boom"):
        with ProfilingContext(model, grad=not grad):
            raise RuntimeError("boom")
    assert _flags(model) == flags
    assert torch.is_grad_enabled() == grad


def test_seed_makes_randomness_repeat() -> None:
    with ProfilingContext(None, seed=3):
        first = (random.random(), torch.rand(2).tolist(), float(np.random.rand()))
    with ProfilingContext(None, seed=3):
        second = (random.random(), torch.rand(2).tolist(), float(np.random.rand()))
    assert first == second


def test_train_mode_with_dropout_off() -> None:
    model = _model()
    inner = model[2]
    assert isinstance(inner, nn.Sequential)
    with ProfilingContext(model, eval_mode=False, disable_dropout=True):
        assert model[0].training
        assert not model[1].training and not inner[0].training
        x = torch.ones(1, 2)
        assert torch.equal(model(x), model(x))  # no dropout noise


def test_none_leaves_settings_alone() -> None:
    threads, grad = torch.get_num_threads(), torch.is_grad_enabled()
    state = torch.get_rng_state()
    with ProfilingContext(None, seed=None, threads=None, grad=None):
        assert torch.get_num_threads() == threads
        assert torch.is_grad_enabled() == grad
        assert torch.equal(torch.get_rng_state(), state)


def test_not_reentrant_and_validates_threads() -> None:
    ctx = ProfilingContext(None)
    with ctx:
        with pytest.raises(RuntimeError, match="re-entrant"):
            ctx.__enter__()
    with pytest.raises(ValueError, match="threads"):
        ProfilingContext(None, threads=0)
