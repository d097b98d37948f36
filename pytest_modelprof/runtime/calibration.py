"""Timing a model against the calibration workloads: alternating rounds, more when undecided.

The statistics that judge the rounds live in :mod:`pytest_modelprof.runtime.noise`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Final

import torch

from pytest_modelprof._tensors import as_inputs, call_model, module_device
from pytest_modelprof.errors import SettingsError
from pytest_modelprof.runtime.context import ProfilingContext

#: Bumped whenever the calibration workloads change; ratios of different versions differ.
#: v2: three workloads (dispatch, compute, memory) instead of one.
from pytest_modelprof.runtime.noise import (
    CALIBRATION_PARTS,
    CALIBRATION_VERSION,
    DEFAULT_ALPHA,
    DEFAULT_MAX_ROUNDS_FACTOR,
    DEFAULT_QUANTILE,
    DEFAULT_TOLERANCE,
    NormalisedTiming,
    compare_sequential,
)
from pytest_modelprof.runtime.timing import (
    PerfCounterTimer,
    Timer,
    timer_for,
)

__all__ = [
    "DEFAULT_BASELINE_ROUNDS_FACTOR",
    "calibration_workload",
    "calibration_workloads",
    "measure_normalised",
    "measure_forward_normalised",
    "measure_forward_sequential",
]

#: A baseline is measured with this many times the initial rounds, at once. It is not the run
#: cap (:data:`DEFAULT_MAX_ROUNDS_FACTOR`): a larger cap for undecided runs must not make
#: recording a baseline slower, and 400 rounds were enough for a baseline (BENCHMARKS.md).
DEFAULT_BASELINE_ROUNDS_FACTOR: Final = 4


class _ReferenceNet(torch.nn.Module):
    """The dispatch-heavy calibration workload: many small ops and module calls.

    Convolutions, batch norm, matrix products, softmax attention, layer norm and GELU on
    small tensors, so that the interpreter and dispatch overhead a model pays is in the
    reference too.
    """

    def __init__(self) -> None:
        super().__init__()
        nn = torch.nn
        self.conv = nn.Sequential(
            nn.Conv2d(8, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(),
            nn.Conv2d(16, 16, 3, stride=2, padding=1), nn.ReLU(),
        )
        self.proj = nn.Linear(16, 64)
        self.norm = nn.LayerNorm(64)
        self.mlp = nn.Sequential(nn.Linear(64, 128), nn.GELU(), nn.Linear(128, 64))

    def forward(self, image: torch.Tensor) -> torch.Tensor:
        x = self.conv(image).flatten(2).transpose(1, 2)  # (1, 144, 16) tokens
        x = self.norm(self.proj(x))
        attn = torch.softmax(x @ x.transpose(1, 2) / 8.0, dim=-1)
        x = x + attn @ x
        out: torch.Tensor = x + self.mlp(x)
        return out


def calibration_workload(device: torch.device | str | None = None) -> Callable[[], None]:
    """The dispatch-heavy reference workload (~0.3 ms single-threaded on a server core).

    The first of :func:`calibration_workloads`; it runs on ``device`` (CPU by default).
    """
    return calibration_workloads(device)[0]


def calibration_workloads(device: torch.device | str | None = None) -> list[Callable[[], None]]:
    """The fixed reference workloads of :data:`CALIBRATION_PARTS`, seeded, on ``device``.

    ``dispatch``: a small transformer-and-conv block (many small ops); ``compute``: a conv on
    32x32 maps and a 192x192 matrix product; ``memory``: four passes over a 1 MiB tensor.
    Each takes 0.1-0.3 ms single-threaded on a server core. Changing any of them changes
    every stored ratio: bump :data:`CALIBRATION_VERSION` when it happens.
    """
    dev = torch.device(device) if device is not None else torch.device("cpu")
    state = torch.random.get_rng_state()
    try:
        torch.manual_seed(1234)
        net = _ReferenceNet().eval().to(dev)
        conv = torch.nn.Conv2d(16, 32, 3, padding=1).eval().to(dev)
    finally:
        torch.random.set_rng_state(state)
    gen = torch.Generator().manual_seed(1234)
    image = torch.randn(1, 8, 24, 24, generator=gen).to(dev)
    maps = torch.randn(1, 16, 32, 32, generator=gen).to(dev)
    square = torch.randn(192, 192, generator=gen).to(dev)
    big = torch.randn(256 * 1024, generator=gen).to(dev)
    out = torch.empty_like(big)

    def dispatch() -> None:
        with torch.no_grad():
            net(image)

    def compute() -> None:
        with torch.no_grad():
            conv(maps)
            square @ square

    def memory() -> None:
        torch.mul(big, 1.0001, out=out)
        torch.add(out, big, out=out)
        out.clamp_(min=0.0)
        out.copy_(big)

    return [dispatch, compute, memory]


def _round_order(i: int, k: int) -> list[int]:
    """Which of ``k`` workloads (0 = the model) run in round ``i``, and in what order.

    The order rotates every round and reverses every ``k`` rounds, so each workload runs
    after each other one equally often: a cache left cold by one is not always billed to the
    same other, and a slow drift affects all of them alike on average.
    """
    r = i % k
    order = [*range(k)][r:] + [*range(k)][:r]
    return order[::-1] if (i // k) % 2 else order


def measure_normalised(
    fn: Callable[[], object],
    *,
    rounds: int = 100,
    warmup: int = 5,
    timer: Timer | None = None,
    calibration: Callable[[], object] | Sequence[Callable[[], object]] | None = None,
    threads: int | None = 1,
    quantile: float = DEFAULT_QUANTILE,
) -> NormalisedTiming:
    """Time ``fn`` and the calibration workloads in rotating order, ``rounds`` each.

    ``calibration`` defaults to :func:`calibration_workloads`; with one callable the rounds
    alternate (ABBA) as in calibration version 1.
    """
    if rounds < 2:
        raise SettingsError(f"rounds must be >= 2 for a comparison, got {rounds}")
    clock = timer or PerfCounterTimer()
    if calibration is None:
        calibs: list[Callable[[], object]] = list(calibration_workloads())
    elif callable(calibration):
        calibs = [calibration]
    else:
        calibs = list(calibration)
    fns: list[Callable[[], object]] = [fn, *calibs]
    times: list[list[float]] = [[] for _ in fns]
    with ProfilingContext(None, seed=None, threads=threads, grad=False):
        for _ in range(warmup):
            for f in fns[1:]:
                f()
            fn()
        for i in range(rounds):
            # A single calibration keeps version 1's order: calibration first in even rounds.
            if len(fns) > 2:
                order = _round_order(i, len(fns))
            else:
                order = [1, 0] if i % 2 == 0 else [0, 1]
            for j in order:
                times[j].append(clock.time(fns[j]))
    return NormalisedTiming.from_parts(
        times[0], times[1:], quantile=quantile, timer=clock.name, warmup=warmup
    )


def measure_forward_normalised(
    model: torch.nn.Module,
    inputs: Any,
    *,
    rounds: int = 100,
    warmup: int = 5,
    seed: int | None = 0,
    threads: int | None = 1,
    quantile: float = DEFAULT_QUANTILE,
) -> NormalisedTiming:
    """:func:`measure_normalised` of the model's forward, in a :class:`ProfilingContext`.

    On a CUDA model the rounds are timed with CUDA events and the calibration workloads run
    on the same device.
    """
    batch = as_inputs(inputs)
    device = module_device(model)
    with ProfilingContext(model, seed=seed, threads=threads, eval_mode=True, grad=False):
        return measure_normalised(
            lambda: call_model(model, batch),
            rounds=rounds,
            warmup=warmup,
            timer=timer_for(device),
            calibration=calibration_workloads(device if device.type != "cpu" else None),
            threads=threads,
            quantile=quantile,
        )


def measure_forward_sequential(
    model: torch.nn.Module,
    inputs: Any,
    baseline: NormalisedTiming | None,
    *,
    rounds: int = 100,
    max_rounds: int | None = None,
    tolerance: float = DEFAULT_TOLERANCE,
    alpha: float = DEFAULT_ALPHA,
    seed: int | None = 0,
    threads: int | None = 1,
    baseline_rounds: int | None = None,
) -> NormalisedTiming:
    """:func:`measure_forward_normalised`, with more rounds only while the verdict is undecided.

    With a comparable ``baseline`` it follows :func:`compare_sequential`: ``rounds`` rounds,
    then more up to ``max_rounds`` (default :data:`DEFAULT_MAX_ROUNDS_FACTOR` x ``rounds``).
    Without one (recording or updating a baseline: pass ``None``) it measures
    ``baseline_rounds`` rounds at once (default :data:`DEFAULT_BASELINE_ROUNDS_FACTOR` x
    ``rounds``), because a baseline is measured once and judged against many times; a
    baseline from a briefly disturbed 100 rounds made 8-10 % of later detections miss in
    ``benchmarks/bench_timing_gate.py``. Judge the result with :func:`compare_timings` and
    the same ``tolerance``.
    """
    limit = max_rounds if max_rounds is not None else DEFAULT_MAX_ROUNDS_FACTOR * rounds
    if baseline_rounds is None:
        baseline_rounds = DEFAULT_BASELINE_ROUNDS_FACTOR * rounds

    def measure(n: int) -> NormalisedTiming:
        return measure_forward_normalised(
            model, inputs, rounds=n, warmup=5, seed=seed, threads=threads
        )

    if baseline is None or not _comparable(baseline):
        return measure(baseline_rounds)
    timing, _ = compare_sequential(
        baseline, measure, rounds=rounds, max_rounds=limit, tolerance=tolerance, alpha=alpha
    )
    return timing


def _comparable(baseline: NormalisedTiming) -> bool:
    return baseline.calibration_version == CALIBRATION_VERSION and len(
        baseline.calibration_parts
    ) == len(CALIBRATION_PARTS)


