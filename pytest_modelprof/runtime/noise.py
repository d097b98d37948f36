"""A latency comparison that shared CI runners do not fool.

Three ideas, each a small pure piece:

1. **Normalise by a calibration workload.** :func:`measure_normalised` alternates rounds of the
   model with rounds of a fixed reference workload (:func:`calibration_workload`, the same in
   every release with the same :data:`CALIBRATION_VERSION`). The model's time is expressed in
   calibration units, so a runner that is 20 % slower overall does not look like a regression.
2. **Use a fast quantile, not the mean.** Interference on a shared machine (preemption, a
   neighbour's cache traffic) only ever *adds* time, so the fastest rounds are the least
   disturbed ones. The statistic is the ratio of the 10th percentiles (:data:`DEFAULT_QUANTILE`)
   of model and calibration rounds; measured on a busy 2-core runner it varied about 1-2 %
   between sessions where medians varied 5-20 % (``benchmarks/bench_timing_gate.py``).
3. **Require both an effect and evidence.** A regression needs a slowdown above the tolerance
   *and* a bootstrap test (rounds resampled with their neighbouring calibration round) that
   puts the probability of "no slowdown at all" below ``alpha``. The same resamples give a
   confidence interval and the confidence figure: the share of resamples agreeing with the
   verdict.

:func:`latency_gate` turns a comparison (and an optional absolute budget) into ok/warn/fail:
timing limits warn unless the user opts into failing (``strict=True``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any, Final, Literal

import torch
from pydantic import BaseModel, ConfigDict

from pytest_modelprof._tensors import as_inputs, call_model, module_device
from pytest_modelprof.runtime.context import ProfilingContext
from pytest_modelprof.runtime.timing import (
    PerfCounterTimer,
    Timer,
    TimingStats,
    summarize,
    timer_for,
)
from pytest_modelprof.runtime.timing import quantile as _quantile_sorted

__all__ = [
    "CALIBRATION_VERSION",
    "DEFAULT_TOLERANCE",
    "DEFAULT_ALPHA",
    "DEFAULT_QUANTILE",
    "Verdict",
    "GateAction",
    "NormalisedTiming",
    "LatencyComparison",
    "GateDecision",
    "calibration_workload",
    "measure_normalised",
    "measure_forward_normalised",
    "bootstrap_slowdown",
    "decide",
    "compare_timings",
    "latency_gate",
]

#: Bumped whenever :func:`calibration_workload` changes; ratios of different versions differ.
CALIBRATION_VERSION: Final = 1
#: Slowdowns up to this fraction are "unchanged" unless the user sets ``max_latency_delta``.
DEFAULT_TOLERANCE: Final = 0.08
#: Significance level of the one-sided bootstrap test.
DEFAULT_ALPHA: Final = 0.05
#: Which quantile of the rounds the statistic compares (see the module docstring).
DEFAULT_QUANTILE: Final = 0.1

Verdict = Literal["regressed", "improved", "unchanged", "inconclusive"]
GateAction = Literal["ok", "warn", "fail"]


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class NormalisedTiming(_Frozen):
    """One session's alternating rounds of the model and the calibration workload.

    ``normalised`` (model time in calibration units, at ``quantile``) is the headline number
    a baseline stores; the round samples inside ``model`` and ``calibration`` are what
    :func:`compare_timings` resamples.
    """

    calibration_version: int = CALIBRATION_VERSION
    quantile: float = DEFAULT_QUANTILE
    rounds: int
    model: TimingStats
    calibration: TimingStats
    normalised: float

    @classmethod
    def from_samples(
        cls,
        model_ms: Sequence[float],
        calibration_ms: Sequence[float],
        *,
        quantile: float = DEFAULT_QUANTILE,
        timer: str = "given",
        warmup: int = 0,
    ) -> NormalisedTiming:
        """Round i of the model is paired with round i of the calibration workload."""
        if len(model_ms) != len(calibration_ms):
            raise ValueError(
                f"need one calibration round per model round, got {len(calibration_ms)} "
                f"for {len(model_ms)}"
            )
        if not 0.0 <= quantile <= 1.0:
            raise ValueError(f"quantile must be in [0, 1], got {quantile}")
        model = summarize(model_ms, timer=timer, warmup=warmup)
        calibration = summarize(calibration_ms, timer=timer, warmup=warmup)
        return cls(
            quantile=quantile,
            rounds=model.rounds,
            model=model,
            calibration=calibration,
            normalised=_statistic(model.samples, calibration.samples, quantile),
        )

    @property
    def latency_ms(self) -> float:
        """The model's raw median latency in this session, in milliseconds."""
        return self.model.median


def _statistic(model: Sequence[float], calibration: Sequence[float] | None, q: float) -> float:
    top = _quantile_sorted(sorted(model), q)
    if calibration is None:
        return top
    bottom = _quantile_sorted(sorted(calibration), q)
    if bottom <= 0:
        raise ValueError("calibration timings must be > 0")
    return top / bottom


class LatencyComparison(_Frozen):
    """The verdict on current vs baseline timings, with its evidence."""

    verdict: Verdict
    slowdown: float  # current / baseline statistic - 1; +0.15 is 15 % slower
    ci_low: float
    ci_high: float
    ci_level: float
    p_slower: float  # bootstrap p-value against "not slower at all"
    p_faster: float  # bootstrap p-value against "not faster at all"
    confidence: float  # share of bootstrap resamples that agree with the verdict
    quantile: float
    tolerance: float
    alpha: float
    rounds_current: int
    rounds_baseline: int
    normalised: bool

    def describe(self) -> str:
        """``"regressed: +15.2 % slower (95 % CI +11.0 .. +19.8 %, p=0.0001, confidence 99 %)"``."""
        if self.slowdown >= 0:
            change = f"{self.slowdown * 100:+.1f} % slower"
        else:
            change = f"{-self.slowdown * 100:.1f} % faster"
        p = self.p_slower if self.slowdown >= 0 else self.p_faster
        return (
            f"{self.verdict}: {change} (tolerance {self.tolerance * 100:.0f} %, "
            f"{self.ci_level * 100:.0f} % CI {self.ci_low * 100:+.1f} .. "
            f"{self.ci_high * 100:+.1f} %, "
            f"p={p:.2g}, confidence {self.confidence * 100:.0f} %, "
            f"q{self.quantile * 100:.0f} of {self.rounds_current} vs {self.rounds_baseline} rounds"
            f"{', calibration-normalised' if self.normalised else ', raw ms'})"
        )


class GateDecision(_Frozen):
    """What the pytest layer does with a timing result: nothing, a warning line, or a failure."""

    action: GateAction
    reasons: list[str]


# -- calibration -------------------------------------------------------------------------------

class _ReferenceNet(torch.nn.Module):
    """The calibration workload: a fixed mix of the ops most models spend their time in.

    Convolutions, batch norm, matrix products, softmax attention, layer norm, GELU and a
    dozen module calls, so that the interpreter and dispatch overhead a model pays is also
    in the reference. What slows one down on a busy runner tends to slow the other.
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
    """The fixed reference workload (~0.4 ms single-threaded on a server core), seeded.

    It runs on ``device`` (CPU by default), next to the model it calibrates. Changing
    :class:`_ReferenceNet` or its input changes every stored ratio: bump
    :data:`CALIBRATION_VERSION` when it happens.
    """
    state = torch.random.get_rng_state()
    try:
        torch.manual_seed(1234)
        net = _ReferenceNet().eval()
        image = torch.randn(1, 8, 24, 24)
    finally:
        torch.random.set_rng_state(state)
    if device is not None:
        net, image = net.to(device), image.to(device)

    def run() -> None:
        with torch.no_grad():
            net(image)

    return run


def measure_normalised(
    fn: Callable[[], object],
    *,
    rounds: int = 100,
    warmup: int = 5,
    timer: Timer | None = None,
    calibration: Callable[[], object] | None = None,
    threads: int | None = 1,
    quantile: float = DEFAULT_QUANTILE,
) -> NormalisedTiming:
    """Time ``fn`` and the calibration workload in alternating order (ABBA), ``rounds`` each.

    Even rounds run calibration then model, odd rounds model then calibration, so a slow
    drift (thermal, a neighbour's job ramping up) affects both sides equally on average.
    """
    if rounds < 2:
        raise ValueError(f"rounds must be >= 2 for a comparison, got {rounds}")
    clock = timer or PerfCounterTimer()
    calib = calibration or calibration_workload()
    model_ms: list[float] = []
    calib_ms: list[float] = []
    with ProfilingContext(None, seed=None, threads=threads, grad=False):
        for _ in range(warmup):
            calib()
            fn()
        for i in range(rounds):
            if i % 2 == 0:
                c = clock.time(calib)
                m = clock.time(fn)
            else:
                m = clock.time(fn)
                c = clock.time(calib)
            model_ms.append(m)
            calib_ms.append(c)
    return NormalisedTiming.from_samples(
        model_ms, calib_ms, quantile=quantile, timer=clock.name, warmup=warmup
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

    On a CUDA model the rounds are timed with CUDA events and the calibration workload runs
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
            calibration=calibration_workload(device if device.type != "cpu" else None),
            threads=threads,
            quantile=quantile,
        )


# -- statistics --------------------------------------------------------------------------------

_Side = tuple[list[float], list[float] | None]


def _side(x: NormalisedTiming | TimingStats | Sequence[float]) -> _Side:
    if isinstance(x, NormalisedTiming):
        return list(x.model.samples), list(x.calibration.samples)
    if isinstance(x, TimingStats):
        return list(x.samples), None
    return [float(v) for v in x], None


def bootstrap_slowdown(
    current: NormalisedTiming | TimingStats | Sequence[float],
    baseline: NormalisedTiming | TimingStats | Sequence[float],
    *,
    quantile: float = DEFAULT_QUANTILE,
    resamples: int = 2000,
    seed: int = 0,
) -> list[float]:
    """Sorted bootstrap replicates of the slowdown ``stat(current) / stat(baseline) - 1``.

    Rounds are resampled with replacement, each model round together with its calibration
    round, independently on both sides; seeded, so the same inputs give the same replicates.
    """
    if resamples < 1:
        raise ValueError(f"resamples must be >= 1, got {resamples}")
    gen = torch.Generator().manual_seed(seed)

    def replicates(side: _Side) -> torch.Tensor:
        model = torch.tensor(side[0], dtype=torch.float64)
        idx = torch.randint(len(model), (resamples, len(model)), generator=gen)
        top = torch.quantile(model[idx], quantile, dim=1)
        if side[1] is None:
            return top
        calib = torch.tensor(side[1], dtype=torch.float64)
        return top / torch.quantile(calib[idx], quantile, dim=1)

    reps = replicates(_side(current)) / replicates(_side(baseline)) - 1.0
    return sorted(float(r) for r in reps.tolist())


def decide(
    slowdown: float, p_slower: float, p_faster: float, *, tolerance: float, alpha: float
) -> Verdict:
    """The verdict rule of :func:`compare_timings`, on its own so benchmarks can sweep it."""
    if slowdown > tolerance:
        return "regressed" if p_slower < alpha else "inconclusive"
    if slowdown < -tolerance:
        return "improved" if p_faster < alpha else "inconclusive"
    return "unchanged"


def compare_timings(
    current: NormalisedTiming | TimingStats | Sequence[float],
    baseline: NormalisedTiming | TimingStats | Sequence[float],
    *,
    tolerance: float = DEFAULT_TOLERANCE,
    alpha: float = DEFAULT_ALPHA,
    quantile: float | None = None,
    resamples: int = 2000,
    ci_level: float = 0.95,
    seed: int = 0,
) -> LatencyComparison:
    """Judge ``current`` against ``baseline``: two normalised sessions, or two raw timings.

    * ``regressed``: slowdown > ``tolerance`` and the bootstrap rules out "not slower" at ``alpha``;
    * ``improved``: the mirror image;
    * ``inconclusive``: the change exceeds the tolerance but the rounds are too noisy to be sure;
    * ``unchanged``: the change is within the tolerance.

    ``quantile`` defaults to the one the sessions were summarised with.
    """
    if not (0 <= tolerance and math.isfinite(tolerance)):
        raise ValueError(f"tolerance must be a finite fraction >= 0, got {tolerance}")
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be in (0, 1), got {alpha}")
    cur, base = _side(current), _side(baseline)
    if (cur[1] is None) != (base[1] is None):
        raise ValueError(
            "cannot compare calibration-normalised timings with raw milliseconds; measure both "
            "with measure_normalised() or both without"
        )
    if isinstance(current, NormalisedTiming) and isinstance(baseline, NormalisedTiming):
        if current.calibration_version != baseline.calibration_version:
            raise ValueError(
                f"the baseline was normalised with calibration v{baseline.calibration_version}, "
                f"the current run with v{current.calibration_version}; re-record the baseline"
            )
    q = quantile
    if q is None:
        q = baseline.quantile if isinstance(baseline, NormalisedTiming) else DEFAULT_QUANTILE
    if len(cur[0]) < 2 or len(base[0]) < 2:
        raise ValueError("each side needs at least 2 rounds")
    base_stat = _statistic(base[0], base[1], q)
    if base_stat <= 0:
        raise ValueError("baseline timings must be > 0")
    slowdown = _statistic(cur[0], cur[1], q) / base_stat - 1.0
    reps = bootstrap_slowdown(current, baseline, quantile=q, resamples=resamples, seed=seed)
    n = len(reps)
    # Add-one smoothing: a p-value from n resamples is never exactly 0.
    p_slower = (sum(1 for r in reps if r <= 0) + 1) / (n + 1)
    p_faster = (sum(1 for r in reps if r >= 0) + 1) / (n + 1)
    tail = (1.0 - ci_level) / 2
    ci_low, ci_high = _quantile_sorted(reps, tail), _quantile_sorted(reps, 1 - tail)
    share_above = sum(1 for r in reps if r > tolerance) / n
    share_below = sum(1 for r in reps if r < -tolerance) / n
    verdict = decide(slowdown, p_slower, p_faster, tolerance=tolerance, alpha=alpha)
    confidence = {
        "regressed": share_above,
        "improved": share_below,
        "inconclusive": max(share_above, share_below),
        "unchanged": 1.0 - share_above - share_below,
    }[verdict]
    return LatencyComparison(
        verdict=verdict,
        slowdown=slowdown,
        ci_low=ci_low,
        ci_high=ci_high,
        ci_level=ci_level,
        p_slower=p_slower,
        p_faster=p_faster,
        confidence=confidence,
        quantile=q,
        tolerance=tolerance,
        alpha=alpha,
        rounds_current=len(cur[0]),
        rounds_baseline=len(base[0]),
        normalised=cur[1] is not None,
    )


def latency_gate(
    comparison: LatencyComparison | None,
    *,
    latency_ms: float | None = None,
    max_latency_ms: float | None = None,
    strict: bool = False,
) -> GateDecision:
    """ok / warn / fail for a timing result: timing limits warn unless ``strict`` is set.

    ``max_latency_ms`` is an absolute budget on the current median in milliseconds; unlike the
    normalised comparison it depends on the runner, which is one more reason it only warns
    by default.
    """
    reasons: list[str] = []
    if comparison is not None and comparison.verdict == "regressed":
        reasons.append(f"latency {comparison.describe()}")
    if max_latency_ms is not None and latency_ms is not None and latency_ms > max_latency_ms:
        reasons.append(f"latency {latency_ms:.3g} ms is over the budget of {max_latency_ms:g} ms")
    if not reasons:
        return GateDecision(action="ok", reasons=[])
    return GateDecision(action="fail" if strict else "warn", reasons=reasons)
