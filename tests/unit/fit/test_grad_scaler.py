"""fp16-mixed runs the step as torch's recipe does: ``torch.amp.GradScaler`` scales the loss,
unscales the gradients in place (one found-inf per device) before the optimizer's update, and
keeps its scale and growth tracker between steps. The estimate runs the real ``GradScaler``
API; the one call that reads a value (whether a gradient overflowed: ``.item()``) is answered
"no" on tensors without data, which allocates nothing, so the step tracked on real tensors with
the plain ``GradScaler`` is the same, byte for byte."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from pytest_modelprof.fit import StepOptions, estimate_memory, measure_step_memory
from pytest_modelprof.fit.tracker import LifetimeTracker


def _mlp() -> nn.Module:
    return nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 8))


@pytest.mark.parametrize("impl", ["for-loop", "foreach", "fused"])
def test_fp16_mixed_counts_the_grad_scaler(impl: str) -> None:
    torch.manual_seed(0)
    model, x = _mlp(), torch.randn(16, 32)
    options = StepOptions(precision="fp16-mixed", optimizer="adamw", optimizer_impl=impl)
    est = estimate_memory(model, inputs=x, options=options)
    real = measure_step_memory(model, x, options=options)
    assert est.mode == "fake"
    assert est.breakdown == real.breakdown and est.peak_at == real.peak_at
    # The scale (fp32) and the growth tracker (int32), one element each, kept between steps.
    assert est.breakdown["grad_scaler"] == 4 + 4
    bf16 = estimate_memory(model, inputs=x, options=StepOptions(precision="bf16-mixed"))
    assert bf16.breakdown["grad_scaler"] == 0  # bf16 has fp32's range: no loss scaling


def _tracked(scaler: torch.amp.GradScaler) -> tuple[list[tuple[int, str]], list[str], int]:
    """A real fp16-mixed step written as torch's AMP recipe, under the lifetime tracker: the
    storages made (bytes, phase), the order of every allocation and free, the peak."""
    torch.manual_seed(0)
    model, x = _mlp(), torch.randn(16, 32)
    opt = torch.optim.AdamW(model.parameters(), foreach=True)
    tracker = LifetimeTracker([*model.parameters(), x])
    with tracker:
        with torch.autocast("cpu", dtype=torch.float16):
            loss = model(x).float().pow(2).mean()
        scaler.scale(loss).backward()
        del loss
        scaler.step(opt)
        scaler.update()
    made = [(a.nbytes, a.phase) for a in tracker.log]
    # Op counts differ by the .item() calls (ops that allocate nothing); the order does not.
    events = sorted(
        [(a.born, 1, f"+{i}") for i, a in enumerate(tracker.log)]
        + [(a.freed, 0, f"-{i}") for i, a in enumerate(tracker.log)]
    )
    return made, [e[2] for e in events], tracker.peak_bytes


def test_the_no_overflow_scaler_is_the_real_one_byte_for_byte() -> None:
    """On real tensors (no overflow) the scaler the estimate runs allocates and frees exactly
    what ``torch.amp.GradScaler("cpu")`` does, in the same order."""
    from pytest_modelprof._compat import no_overflow_grad_scaler

    plain = _tracked(torch.amp.GradScaler("cpu"))
    ours = _tracked(no_overflow_grad_scaler("cpu"))
    assert plain == ours and len(plain[0]) > 10


def test_the_no_overflow_scaler_steps_on_fake_tensors() -> None:
    """Smoke test of the private method it overrides: torch's own ``step`` reads the found-inf
    with ``.item()``, which has no value on fake tensors."""
    from pytest_modelprof._compat import FakeTensorMode, no_overflow_grad_scaler

    with FakeTensorMode(allow_non_fake_inputs=True):
        model = nn.Linear(4, 4)
        opt = torch.optim.SGD(model.parameters(), lr=0.1, foreach=False)
        scaler = no_overflow_grad_scaler("cpu")
        with torch.autocast("cpu", dtype=torch.float16):
            loss = model(torch.empty(2, 4)).float().sum()
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        assert model.weight.grad is not None
