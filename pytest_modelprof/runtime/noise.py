"""A latency comparison that shared CI runners do not fool.

Four ideas, each a small pure piece:

1. **Normalise by calibration workloads.** :func:`measure_normalised` rotates rounds of the
   model with rounds of three fixed reference workloads (:func:`calibration_workloads`: one
   dominated by dispatch overhead, one compute-bound, one memory-bound; the same in every
   release with the same :data:`CALIBRATION_VERSION`). The model's time is expressed in
   calibration units, so a runner that is 20 % slower overall does not look like a regression.
   One reference alone was not enough: on a shared 2-core machine its fast quantile jumped
   by 10-13 % for whole sessions while the model's did not, and every comparison against such
   a session was a false alarm. The geometric mean over three different workloads moved
   2-3x less (``benchmarks/bench_timing_gate.py``, BENCHMARKS.md).
2. **Use the fastest rounds, not the mean.** Interference on a shared machine (preemption, a
   neighbour's cache traffic) only ever *adds* time, so the fastest rounds are the least
   disturbed ones. The statistic is the mean of the model's fastest 10 % of rounds
   (:data:`DEFAULT_QUANTILE`) over the geometric mean of the same for each workload: it
   varies less than the 10th percentile did (BENCHMARKS.md).
3. **Require both an effect and evidence.** A regression needs a slowdown above the tolerance
   *and* a bootstrap test (rounds resampled together with their neighbouring calibration
   rounds) that puts the probability of "no slowdown beyond the tolerance" below ``alpha``.
   The same resamples give a confidence interval and the confidence figure: the share of
   resamples beyond the tolerance, so a ``regressed`` verdict is at least ``1 - alpha`` sure.
4. **More rounds only when undecided.** :func:`compare_sequential` measures
   ``rounds`` rounds, and adds more (up to ``max_rounds``) only while the interval still
   straddles the tolerance, so clear cases stay cheap.

:func:`latency_gate` turns a comparison (and an optional absolute budget) into ok/warn/fail:
a decisive result beyond a limit fails, an undecided one warns (``strict=False``: all warn).
:func:`timing_to_store` keeps a baseline's stored rounds while a new measurement is not
significantly different, so updating baselines does not rewrite them on every run.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from typing import Final, Literal

import torch

from pytest_modelprof.errors import MeasurementError, SettingsError
from pytest_modelprof.runtime.timing import (
    TimingStats,
    summarize,
)
from pytest_modelprof.runtime.timing import quantile as _quantile_sorted
from pytest_modelprof.schema import Frozen

__all__ = [
    "CALIBRATION_VERSION",
    "CALIBRATION_PARTS",
    "DEFAULT_TOLERANCE",
    "DEFAULT_ALPHA",
    "DEFAULT_QUANTILE",
    "DEFAULT_MAX_ROUNDS_FACTOR",
    "GateAction",
    "NormalisedTiming",
    "LatencyComparison",
    "GateDecision",
    "fast_mean",
    "decide",
    "compare_timings",
    "needs_more_rounds",
    "compare_sequential",
]

#: Bumped whenever the calibration workloads change; ratios of different versions differ.
#: v2: three workloads (dispatch, compute, memory) instead of one.
CALIBRATION_VERSION: Final = 2
#: The calibration workloads of this version, in the order their rounds are stored.
CALIBRATION_PARTS: Final = ("dispatch", "compute", "memory")
#: Slowdowns up to this fraction are "unchanged" unless the user sets ``max_latency_delta``.
DEFAULT_TOLERANCE: Final = 0.08
#: Significance level of the one-sided bootstrap test.
DEFAULT_ALPHA: Final = 0.05
#: The share of fastest rounds whose mean the statistic compares (see the module docstring).
DEFAULT_QUANTILE: Final = 0.1
#: :func:`compare_sequential` measures at most this many times the initial rounds. 8, not 4:
#: under load most missed detections were runs still undecided at 400 rounds.
DEFAULT_MAX_ROUNDS_FACTOR: Final = 8

Verdict = Literal["regressed", "improved", "unchanged", "inconclusive"]
GateAction = Literal["ok", "warn", "fail"]


def _geomean(values: Sequence[float]) -> float:
    return math.exp(math.fsum(math.log(v) for v in values) / len(values))


class NormalisedTiming(Frozen):
    """One session's rotating rounds of the model and the calibration workloads.

    ``normalised`` (model time in calibration units: the mean of the fastest ``quantile``
    share of rounds on each side, :func:`fast_mean`) is the headline number
    a baseline stores; the round samples are what :func:`compare_timings` resamples.
    ``calibration`` holds one number per round (the geometric mean of the workloads in
    ``calibration_parts``, or the single workload of a session made by :meth:`from_samples`).
    """

    calibration_version: int = CALIBRATION_VERSION
    quantile: float = DEFAULT_QUANTILE
    rounds: int
    model: TimingStats
    calibration: TimingStats
    calibration_parts: list[TimingStats] = []
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
        """Round i of the model is paired with round i of one calibration workload."""
        return cls.from_parts(
            model_ms, [calibration_ms], quantile=quantile, timer=timer, warmup=warmup
        )

    @classmethod
    def from_parts(
        cls,
        model_ms: Sequence[float],
        parts_ms: Sequence[Sequence[float]],
        *,
        quantile: float = DEFAULT_QUANTILE,
        timer: str = "given",
        warmup: int = 0,
        calibration_version: int = CALIBRATION_VERSION,
    ) -> NormalisedTiming:
        """Round i of the model with round i of each calibration workload in ``parts_ms``."""
        if not parts_ms:
            raise MeasurementError("need at least one calibration workload")
        for part in parts_ms:
            if len(part) != len(model_ms):
                raise MeasurementError(
                    f"need a calibration round per model round, got {len(part)} for {len(model_ms)}"
                )
        if not 0.0 <= quantile <= 1.0:
            raise SettingsError(f"quantile must be in [0, 1], got {quantile}")
        model = summarize(model_ms, timer=timer, warmup=warmup)
        parts = [summarize(p, timer=timer, warmup=warmup) for p in parts_ms]
        if any(v <= 0 for p in parts for v in p.samples):
            raise MeasurementError("calibration timings must be > 0")
        if len(parts) == 1:
            calibration, stored_parts = parts[0], []
        else:
            per_round = [_geomean(r) for r in zip(*(p.samples for p in parts), strict=True)]
            calibration = summarize(per_round, timer=timer, warmup=warmup)
            stored_parts = parts
        return cls(
            calibration_version=calibration_version,
            quantile=quantile,
            rounds=model.rounds,
            model=model,
            calibration=calibration,
            calibration_parts=stored_parts,
            normalised=_statistic(_side(model.samples, _parts_of(calibration, stored_parts)),
                                  quantile),
        )

    def extended(self, more: NormalisedTiming) -> NormalisedTiming:
        """This session's rounds followed by ``more``'s (same calibration and quantile)."""
        if (more.calibration_version, len(more.calibration_parts)) != (
            self.calibration_version, len(self.calibration_parts)
        ):
            raise MeasurementError("cannot join rounds measured with different calibrations")
        return NormalisedTiming.from_parts(
            [*self.model.samples, *more.model.samples],
            [[*a, *b] for a, b in zip(self.parts_ms, more.parts_ms, strict=True)],
            quantile=self.quantile,
            timer=self.model.timer,
            warmup=self.model.warmup,
            calibration_version=self.calibration_version,
        )

    def head(self, rounds: int) -> NormalisedTiming:
        """The first ``rounds`` rounds of this session, as if it had stopped there."""
        if not 2 <= rounds <= self.rounds:
            raise SettingsError(f"rounds must be in [2, {self.rounds}], got {rounds}")
        return NormalisedTiming.from_parts(
            self.model.samples[:rounds],
            [p[:rounds] for p in self.parts_ms],
            quantile=self.quantile,
            timer=self.model.timer,
            warmup=self.model.warmup,
            calibration_version=self.calibration_version,
        )

    @property
    def parts_ms(self) -> list[list[float]]:
        """Round samples of each calibration workload (one list for a single workload)."""
        return [list(p.samples) for p in _parts_of(self.calibration, self.calibration_parts)]

    @property
    def latency_ms(self) -> float:
        """The model's raw median latency in this session, in milliseconds."""
        return self.model.median

    @property
    def fast_ms(self) -> float:
        """The model's mean over its fastest ``quantile`` share of rounds (what the comparison
        looks at), in ms."""
        return fast_mean(sorted(self.model.samples), self.quantile)


def _fast_count(rounds: int, share: float) -> int:
    return max(1, min(rounds, math.floor(rounds * share + 0.5)))


def fast_mean(ordered: Sequence[float], share: float) -> float:
    """The mean of the fastest ``share`` of the ascending ``ordered`` values (at least one)."""
    k = _fast_count(len(ordered), share)
    return math.fsum(ordered[:k]) / k


def _parts_of(calibration: TimingStats, parts: Sequence[TimingStats]) -> list[TimingStats]:
    return list(parts) if parts else [calibration]


# A session as plain lists: the model's rounds and, per calibration workload, its rounds
# (``None`` for raw milliseconds without calibration).
_Side = tuple[list[float], list[list[float]] | None]


def _side(model: Sequence[float], parts: Sequence[TimingStats] | None) -> _Side:
    return [float(v) for v in model], (
        None if parts is None else [list(p.samples) for p in parts]
    )


def _statistic(side: _Side, q: float) -> float:
    top = fast_mean(sorted(side[0]), q)
    if side[1] is None:
        return top
    bottom = _geomean([fast_mean(sorted(p), q) for p in side[1]])
    if bottom <= 0:
        raise MeasurementError("calibration timings must be > 0")
    return top / bottom


class LatencyComparison(Frozen):
    """The verdict on current vs baseline timings, with its evidence."""

    verdict: Verdict
    slowdown: float  # current / baseline statistic - 1; +0.15 is 15 % slower
    ci_low: float
    ci_high: float
    ci_level: float
    p_slower: float  # bootstrap p-value against "not slower than the tolerance"
    p_faster: float  # bootstrap p-value against "not faster than the tolerance"
    confidence: float  # share of bootstrap resamples that agree with the verdict
    quantile: float
    tolerance: float
    alpha: float
    rounds_current: int
    rounds_baseline: int
    normalised: bool
    # The model's raw milliseconds (its fastest ``quantile`` share) on each side, to read; on a
    # different or busier runner they differ by more than ``slowdown`` says.
    baseline_ms: float = 0.0
    current_ms: float = 0.0

    def describe(self) -> str:
        """``"regressed: 0.41 → 0.47 ms (fastest 10 %), +15.2 % slower ..., confidence 99 %"``."""
        if self.slowdown >= 0:
            change = f"{self.slowdown * 100:+.1f} % slower"
        else:
            change = f"{-self.slowdown * 100:.1f} % faster"
        p = self.p_slower if self.slowdown >= 0 else self.p_faster
        # How sure a change is goes with a change; "unchanged" beside "confidence 100 %" read
        # as a contradiction, so an unchanged result gives its interval only. An undecided one
        # keeps it: "+9 %, confidence 62 %" is what tells it from a measured fact.
        sure = (
            f", confidence {self.confidence * 100:.0f} % ("
            if self.verdict != "unchanged"
            else " ("
        )
        return (
            f"{self.verdict}: {self.baseline_ms:.4g} \u2192 {self.current_ms:.4g} ms "
            f"(fastest {self.quantile * 100:.0f} %), {change} "
            f"{'calibration-normalised' if self.normalised else 'in raw ms'} "
            f"(limit {self.tolerance * 100:+.0f} %){sure}"
            f"{self.ci_level * 100:.0f} % CI {self.ci_low * 100:+.1f} .. "
            f"{self.ci_high * 100:+.1f} %, p={p:.2g}, "
            f"{self.rounds_current} vs {self.rounds_baseline} rounds)"
        )


class GateDecision(Frozen):
    """What the pytest layer does with a timing result: nothing, a warning line, or a failure.

    ``reasons`` are the texts to show (each with baseline -> current ms, change, limit and
    confidence); ``notes`` say why a timing was not judged (inconclusive rounds).
    ``verdict``, ``slowdown`` and ``confidence`` repeat the comparison's figures, or are
    ``None`` without a baseline.
    """

    action: GateAction
    reasons: list[str]
    notes: list[str] = []
    verdict: Verdict | None = None
    slowdown: float | None = None
    confidence: float | None = None


# -- statistics --------------------------------------------------------------------------------

Timings = NormalisedTiming | TimingStats | Sequence[float]


def _as_side(x: Timings) -> _Side:
    if isinstance(x, NormalisedTiming):
        return _side(x.model.samples, _parts_of(x.calibration, x.calibration_parts))
    if isinstance(x, TimingStats):
        return _side(x.samples, None)
    return _side(x, None)


@functools.lru_cache(maxsize=64)
def _replicates(
    model: tuple[float, ...],
    parts: tuple[tuple[float, ...], ...] | None,
    quantile: float,
    resamples: int,
    seed: int,
) -> torch.Tensor:
    """Bootstrap replicates of one side's statistic (cached: a baseline is judged many times)."""
    gen = torch.Generator().manual_seed(seed)
    rounds = torch.tensor(model, dtype=torch.float64)
    idx = torch.randint(len(rounds), (resamples, len(rounds)), generator=gen)
    k = _fast_count(len(rounds), quantile)  # fast_mean over each resample: its k fastest
    top = torch.topk(rounds[idx], k, dim=1, largest=False).values.mean(dim=1)
    if parts is None:
        return top
    calib = torch.tensor(parts, dtype=torch.float64)  # (workloads, rounds)
    low = torch.topk(calib[:, idx], k, dim=2, largest=False).values.mean(dim=2)
    return top / torch.exp(torch.log(low).mean(dim=0))


def _side_replicates(side: _Side, quantile: float, resamples: int, seed: int) -> torch.Tensor:
    parts = None if side[1] is None else tuple(tuple(p) for p in side[1])
    return _replicates(tuple(side[0]), parts, quantile, resamples, seed)


def bootstrap_slowdown(
    current: Timings,
    baseline: Timings,
    *,
    quantile: float = DEFAULT_QUANTILE,
    resamples: int = 2000,
    seed: int = 0,
) -> list[float]:
    """Sorted bootstrap replicates of the slowdown ``stat(current) / stat(baseline) - 1``.

    Rounds are resampled with replacement, each model round together with its calibration
    rounds, independently on both sides (seeds ``seed`` and ``seed + 1``), so the same
    inputs give the same replicates.
    """
    if resamples < 1:
        raise SettingsError(f"resamples must be >= 1, got {resamples}")
    cur = _side_replicates(_as_side(current), quantile, resamples, seed)
    base = _side_replicates(_as_side(baseline), quantile, resamples, seed + 1)
    reps = cur / base - 1.0
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


def _check_same_calibration(current: Timings, baseline: Timings) -> None:
    cur, base = _as_side(current), _as_side(baseline)
    if (cur[1] is None) != (base[1] is None):
        raise MeasurementError(
            "cannot compare calibration-normalised timings with raw milliseconds; measure both "
            "with measure_normalised() or both without"
        )
    if isinstance(current, NormalisedTiming) and isinstance(baseline, NormalisedTiming):
        if current.calibration_version != baseline.calibration_version or len(
            current.calibration_parts
        ) != len(baseline.calibration_parts):
            raise MeasurementError(
                f"the baseline was normalised with calibration v{baseline.calibration_version} "
                f"({len(_parts_of(baseline.calibration, baseline.calibration_parts))} "
                f"workloads), the current run with v{current.calibration_version} "
                f"({len(_parts_of(current.calibration, current.calibration_parts))}); "
                "re-record the baseline"
            )


def compare_timings(
    current: Timings,
    baseline: Timings,
    *,
    tolerance: float = DEFAULT_TOLERANCE,
    alpha: float = DEFAULT_ALPHA,
    quantile: float | None = None,
    resamples: int = 2000,
    ci_level: float = 0.95,
    seed: int = 0,
) -> LatencyComparison:
    """Judge ``current`` against ``baseline``: two normalised sessions, or two raw timings.

    * ``regressed``: slowdown > ``tolerance`` and the bootstrap rules out "not slower than
      ``tolerance``" at ``alpha`` (so its confidence, the share beyond it, is >= 1 - alpha);
    * ``improved``: the mirror image;
    * ``inconclusive``: the change exceeds the tolerance but the rounds are too noisy to be sure;
    * ``unchanged``: the change is within the tolerance.

    ``quantile`` defaults to the one the sessions were summarised with.
    """
    if not (0 <= tolerance and math.isfinite(tolerance)):
        raise SettingsError(f"tolerance must be a finite fraction >= 0, got {tolerance}")
    if not 0 < alpha < 1:
        raise SettingsError(f"alpha must be in (0, 1), got {alpha}")
    _check_same_calibration(current, baseline)
    cur, base = _as_side(current), _as_side(baseline)
    q = quantile
    if q is None:
        q = baseline.quantile if isinstance(baseline, NormalisedTiming) else DEFAULT_QUANTILE
    if len(cur[0]) < 2 or len(base[0]) < 2:
        raise MeasurementError("each side needs at least 2 rounds")
    base_stat = _statistic(base, q)
    if base_stat <= 0:
        raise MeasurementError("baseline timings must be > 0")
    slowdown = _statistic(cur, q) / base_stat - 1.0
    reps = bootstrap_slowdown(current, baseline, quantile=q, resamples=resamples, seed=seed)
    n = len(reps)
    # Tested at the tolerance, not at 0: the confidence figure is the share beyond the
    # tolerance, and a "regressed" row must not carry a confidence near 50 %.
    # Add-one smoothing: a p-value from n resamples is never exactly 0.
    p_slower = (sum(1 for r in reps if r <= tolerance) + 1) / (n + 1)
    p_faster = (sum(1 for r in reps if r >= -tolerance) + 1) / (n + 1)
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
        baseline_ms=fast_mean(sorted(base[0]), q),
        current_ms=fast_mean(sorted(cur[0]), q),
    )


def needs_more_rounds(comparison: LatencyComparison) -> bool:
    """Whether more rounds could change the verdict: inconclusive, or the CI straddles a limit."""
    if comparison.verdict == "inconclusive":
        return True
    tol = comparison.tolerance
    return any(comparison.ci_low < edge < comparison.ci_high for edge in (tol, -tol))


def compare_sequential(
    baseline: NormalisedTiming,
    measure: Callable[[int], NormalisedTiming],
    *,
    rounds: int = 100,
    max_rounds: int | None = None,
    tolerance: float = DEFAULT_TOLERANCE,
    alpha: float = DEFAULT_ALPHA,
    resamples: int = 2000,
) -> tuple[NormalisedTiming, LatencyComparison]:
    """Measure ``rounds`` rounds with ``measure(n)``, then more while :func:`needs_more_rounds`.

    Each extra call asks for ``rounds`` more (the last one for what is left of
    ``max_rounds``, default :data:`DEFAULT_MAX_ROUNDS_FACTOR` x ``rounds``); the final verdict
    is :func:`compare_timings` on all rounds together. Returns the rounds and the comparison.
    """
    limit = max_rounds if max_rounds is not None else DEFAULT_MAX_ROUNDS_FACTOR * rounds
    if rounds < 2 or limit < rounds:
        raise MeasurementError(f"need 2 <= rounds <= max_rounds, got {rounds} and {limit}")
    timing = measure(rounds)
    comparison = compare_timings(
        timing, baseline, tolerance=tolerance, alpha=alpha, resamples=resamples
    )
    while needs_more_rounds(comparison) and timing.rounds < limit:
        timing = timing.extended(measure(min(rounds, limit - timing.rounds)))
        comparison = compare_timings(
            timing, baseline, tolerance=tolerance, alpha=alpha, resamples=resamples
        )
    return timing, comparison
