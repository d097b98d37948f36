"""Wall-clock timings: forward, backward and a full training step, with warm-up and rounds.

A :class:`Timer` measures one call in milliseconds. :class:`PerfCounterTimer` reads
``time.perf_counter_ns``; :class:`CudaEventTimer` synchronises the device, brackets the call
with CUDA events and reads the elapsed GPU time. :func:`timer_for` picks one for a device.
The round samples are summarised into a frozen :class:`TimingStats` by :func:`summarize`, a
pure function that the unit tests drive with synthetic samples.
"""

from __future__ import annotations

import copy
import math
import time
from collections.abc import Callable, Sequence
from typing import Any, Protocol, runtime_checkable

import torch
from pydantic import BaseModel, ConfigDict
from torch import nn

from pytest_modelprof._tensors import (
    as_inputs,
    backward,
    call_model,
    default_loss,
    module_device,
)
from pytest_modelprof.errors import MeasurementError, SettingsError
from pytest_modelprof.runtime.context import ProfilingContext

__all__ = [
    "TimingStats",
    "Timer",
    "PerfCounterTimer",
    "CudaEventTimer",
    "timer_for",
    "summarize",
    "quantile",
    "benchmark_function",
    "time_forward",
    "time_backward",
    "time_training_step",
    "LossFn",
]

LossFn = Callable[[Any], torch.Tensor]


class TimingStats(BaseModel):
    """Summary of ``rounds`` timed calls, in milliseconds; ``samples`` keeps every round."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    unit: str = "ms"
    rounds: int
    warmup: int
    timer: str
    mean: float
    std: float
    min: float
    max: float
    median: float
    q1: float
    q3: float
    iqr: float
    samples: list[float]

    def describe(self) -> str:
        """``"4.21 ms (median; IQR 0.12, min 4.05, max 5.40, 50 rounds)"``."""
        return (
            f"{self.median:.3g} ms (median; IQR {self.iqr:.2g}, min {self.min:.3g}, "
            f"max {self.max:.3g}, {self.rounds} rounds)"
        )


def quantile(sorted_values: Sequence[float], q: float) -> float:
    """Linear-interpolation quantile of already sorted values (NumPy's default method)."""
    if not sorted_values:
        raise MeasurementError("quantile of no values")
    if not 0.0 <= q <= 1.0:
        raise SettingsError(f"q must be in [0, 1], got {q}")
    pos = (len(sorted_values) - 1) * q
    lo = math.floor(pos)
    hi = min(lo + 1, len(sorted_values) - 1)
    frac = pos - lo
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * frac


def summarize(
    samples_ms: Sequence[float], *, warmup: int = 0, timer: str = "given"
) -> TimingStats:
    """Mean, sample std, min, max, median and IQR of ``samples_ms`` (``samples`` keeps order)."""
    values = [float(v) for v in samples_ms]
    if not values:
        raise MeasurementError("no timing samples to summarise; rounds must be >= 1")
    if any(not math.isfinite(v) or v < 0 for v in values):
        raise MeasurementError("timing samples must be finite and >= 0")
    ordered = sorted(values)
    n = len(values)
    mean = math.fsum(values) / n
    std = math.sqrt(math.fsum((v - mean) ** 2 for v in values) / (n - 1)) if n > 1 else 0.0
    q1, q3 = quantile(ordered, 0.25), quantile(ordered, 0.75)
    return TimingStats(
        rounds=n,
        warmup=warmup,
        timer=timer,
        mean=mean,
        std=std,
        min=ordered[0],
        max=ordered[-1],
        median=quantile(ordered, 0.5),
        q1=q1,
        q3=q3,
        iqr=q3 - q1,
        samples=values,
    )


# -- timers ----------------------------------------------------------------------------------

@runtime_checkable
class Timer(Protocol):
    """Measures one call of ``fn`` in milliseconds."""

    name: str

    def time(self, fn: Callable[[], object]) -> float:
        """Run ``fn`` once and return how long it took, in milliseconds."""
        ...


class PerfCounterTimer:
    """Host wall clock (``time.perf_counter_ns``). For CPU work, or CUDA work with ``sync``."""

    def __init__(self, sync: Callable[[], None] | None = None) -> None:
        self._sync = sync
        self.name = "perf_counter" + ("+sync" if sync is not None else "")

    def time(self, fn: Callable[[], object]) -> float:
        """Run ``fn`` once and return the elapsed host time in milliseconds."""
        sync = self._sync
        if sync is not None:
            sync()
        start = time.perf_counter_ns()
        fn()
        if sync is not None:
            sync()
        return (time.perf_counter_ns() - start) / 1e6


class CudaEventTimer:
    """GPU time between two CUDA events around the call, after a full device synchronisation."""

    def __init__(self, device: torch.device | str | None = None) -> None:
        if not torch.cuda.is_available():
            raise SettingsError("CudaEventTimer needs a CUDA device; none is available")
        self.device = torch.device(device if device is not None else "cuda")
        self.name = "cuda_event"

    def time(self, fn: Callable[[], object]) -> float:
        """Run ``fn`` once and return the GPU time between its start and end events, in ms."""
        with torch.cuda.device(self.device):
            # Start from an idle device so earlier queued work is not billed to this call.
            torch.cuda.synchronize()
            cuda: Any = torch.cuda  # Event() is untyped upstream
            start = cuda.Event(enable_timing=True)
            end = cuda.Event(enable_timing=True)
            start.record()
            fn()
            end.record()
            end.synchronize()
            return float(start.elapsed_time(end))


def timer_for(device: torch.device | str | None) -> Timer:
    """CUDA events on a CUDA device, the host clock (with a sync for other accelerators) else."""
    dev = torch.device(device) if device is not None else torch.device("cpu")
    if dev.type == "cuda":
        return CudaEventTimer(dev)
    return PerfCounterTimer()


# -- measuring -------------------------------------------------------------------------------

def _check_rounds(rounds: int, warmup: int) -> None:
    if rounds < 1:
        raise SettingsError(f"rounds must be >= 1, got {rounds}")
    if warmup < 0:
        raise SettingsError(f"warmup must be >= 0, got {warmup}")


def benchmark_function(
    fn: Callable[[], object],
    *,
    rounds: int = 50,
    warmup: int = 5,
    timer: Timer | None = None,
    setup: Callable[[], object] | None = None,
) -> TimingStats:
    """Time ``fn()`` ``rounds`` times after ``warmup`` untimed calls; ``setup`` runs untimed."""
    _check_rounds(rounds, warmup)
    clock = timer or PerfCounterTimer()
    for _ in range(warmup):
        if setup is not None:
            setup()
        fn()
    samples: list[float] = []
    for _ in range(rounds):
        if setup is not None:
            setup()
        samples.append(clock.time(fn))
    return summarize(samples, warmup=warmup, timer=clock.name)


def time_forward(
    model: nn.Module,
    inputs: Any,
    *,
    rounds: int = 50,
    warmup: int = 5,
    timer: Timer | None = None,
    seed: int | None = 0,
    threads: int | None = 1,
) -> TimingStats:
    """Forward latency in eval mode under ``torch.no_grad`` inside a :class:`ProfilingContext`."""
    batch = as_inputs(inputs)
    clock = timer or timer_for(module_device(model))
    with ProfilingContext(model, seed=seed, threads=threads, eval_mode=True, grad=False):
        return benchmark_function(
            lambda: call_model(model, batch), rounds=rounds, warmup=warmup, timer=clock
        )


class _StateGuard:
    """Snapshot of parameters, buffers and ``.grad`` so a timed training step leaves no trace."""

    def __init__(self, model: nn.Module) -> None:
        self.model = model
        with torch.no_grad():
            state = model.state_dict(keep_vars=True)
            self.values = {k: v.detach().clone() for k, v in state.items()}
        self.grads = {id(p): p.grad for p in model.parameters()}

    def restore(self) -> None:
        with torch.no_grad():
            for k, v in self.model.state_dict(keep_vars=True).items():
                v.copy_(self.values[k])
        for p in self.model.parameters():
            p.grad = self.grads.get(id(p))


def time_backward(
    model: nn.Module,
    inputs: Any,
    *,
    loss_fn: LossFn | None = None,
    rounds: int = 30,
    warmup: int = 3,
    timer: Timer | None = None,
    seed: int | None = 0,
    threads: int | None = 1,
) -> TimingStats:
    """Time ``loss.backward()`` alone; each round's forward and loss run untimed before it.

    The model is in train mode with dropout off; gradients are cleared before each round and
    put back (with the weights and buffers) afterwards.
    """
    batch = as_inputs(inputs)
    loss_of = loss_fn or default_loss
    clock = timer or timer_for(module_device(model))
    guard = _StateGuard(model)
    holder: list[torch.Tensor] = []

    def setup() -> None:
        model.zero_grad(set_to_none=True)
        holder[:] = [loss_of(call_model(model, batch))]

    def run_backward() -> None:
        backward(holder.pop())

    try:
        with ProfilingContext(model, seed=seed, threads=threads, eval_mode=False, grad=True):
            return benchmark_function(
                run_backward, rounds=rounds, warmup=warmup, timer=clock, setup=setup
            )
    finally:
        guard.restore()


def time_training_step(
    model: nn.Module,
    inputs: Any,
    *,
    optimizer: torch.optim.Optimizer | Callable[[list[nn.Parameter]], torch.optim.Optimizer]
    | None = None,
    loss_fn: LossFn | None = None,
    rounds: int = 30,
    warmup: int = 3,
    timer: Timer | None = None,
    seed: int | None = 0,
    threads: int | None = 1,
) -> TimingStats:
    """Time forward + loss + backward + ``optimizer.step()`` + ``zero_grad`` as one call.

    ``optimizer`` is an optimizer over the model's parameters or a factory taking the
    parameters (default: SGD with momentum). Weights, buffers, gradients and a given
    optimizer's state are restored afterwards, so timing a step does not train the model.
    """
    batch = as_inputs(inputs)
    loss_of = loss_fn or default_loss
    clock = timer or timer_for(module_device(model))
    params = [p for p in model.parameters() if p.requires_grad]
    if optimizer is None:
        opt: torch.optim.Optimizer = torch.optim.SGD(params, lr=1e-3, momentum=0.9)
        opt_state: dict[str, Any] | None = None
    elif isinstance(optimizer, torch.optim.Optimizer):
        opt = optimizer
        opt_state = copy.deepcopy(opt.state_dict())
    else:
        opt = optimizer(params)
        opt_state = None
    guard = _StateGuard(model)

    def step() -> None:
        backward(loss_of(call_model(model, batch)))
        opt.step()
        opt.zero_grad(set_to_none=True)

    try:
        with ProfilingContext(model, seed=seed, threads=threads, eval_mode=False, grad=True):
            return benchmark_function(step, rounds=rounds, warmup=warmup, timer=clock)
    finally:
        guard.restore()
        if opt_state is not None:
            opt.load_state_dict(opt_state)
