"""A latency verdict from the base commit and the head timed side by side, in ABBA rounds.

A stored baseline comes from another session, and one session's level differs from another's by
as much as a regression (BENCHMARKS.md, "Timing gate"). Timing the base and the head in the same
session, interleaved, lets whatever slows the machine slow both; the verdict reads only the
ratio of neighbouring rounds. This module is the pure part:

* :func:`abba_sides` says which side goes first in each round (base-head, head-base, ...), so
  a drift within a round does not always favour one side;
* :class:`PairedTiming` holds one session's paired rounds (one block time per side and round);
* :func:`compare_paired` judges the paired log-ratios: the Hodges-Lehmann estimate (median of
  the Walsh averages) with its Wilcoxon signed-rank interval, and one-sided signed-rank tests
  at the tolerance, turned into the same :class:`~pytest_modelprof.runtime.noise.
  LatencyComparison` (and so the same row) as the stored-baseline comparison;
* :func:`compare_paired_sequential` measures more rounds only while undecided, up to the same
  cap as the stored-baseline mode.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal, Protocol

import torch
from pydantic import BaseModel, ConfigDict

from pytest_modelprof.errors import MeasurementError, ModelprofError, SettingsError
from pytest_modelprof.runtime.noise import (
    DEFAULT_ALPHA,
    DEFAULT_MAX_ROUNDS_FACTOR,
    DEFAULT_QUANTILE,
    DEFAULT_TOLERANCE,
    LatencyComparison,
    NormalisedTiming,
    decide,
    fast_mean,
    needs_more_rounds,
)
from pytest_modelprof.runtime.timing import quantile

__all__ = [
    "Side",
    "SIDES",
    "PairedTiming",
    "abba_sides",
    "compare_paired_sequential",
    "paired_round_cap",
    "split_timing",
    "PairedUnavailable",
    "use_paired_base",
    "paired_base",
]

Side = Literal["base", "head"]
#: Both sides, in the order the rounds report them.
SIDES: Final[tuple[Side, Side]] = ("base", "head")

#: Each round's order: base first in even rounds, head first in odd ones (ABBA ABBA ...).
_ORDERS: Final[tuple[tuple[Side, Side], tuple[Side, Side]]] = (("base", "head"), ("head", "base"))


class PairedComparison(LatencyComparison):
    """A :class:`~pytest_modelprof.runtime.noise.LatencyComparison` from paired rounds: the
    same fields and verdict rule, plus the base commit it was timed beside."""

    paired_base: str

    def describe(self) -> str:
        """As the stored-baseline comparison says it, naming the base instead of the units."""
        text = super().describe()
        text = text.replace(f"(fastest {self.quantile * 100:.0f} %)", "(median round)", 1)
        return text.replace(
            " in raw ms ", f" paired with base {self.paired_base[:12]} in this session ", 1
        )


def abba_sides(round_index: int) -> tuple[Side, Side]:
    """The two sides of round ``round_index`` in the order they run (ABBA: base, head, head,
    base, base, head ...), so each side is first as often as second."""
    return _ORDERS[round_index % 2]


class PairedTiming(BaseModel):
    """One session's rounds: ``base_ms[i]`` and ``head_ms[i]`` were timed one after the other.

    Each value is one side's block time of round ``i`` (the fastest call of the block, see
    :mod:`~pytest_modelprof.runtime.paired_worker`); ``base`` names the commit timed as base.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    base: str
    base_ms: list[float]
    head_ms: list[float]
    calls: int = 1  # calls per block

    @property
    def rounds(self) -> int:
        """Paired rounds measured."""
        return len(self.base_ms)

    def extended(self, more: PairedTiming) -> PairedTiming:
        """These rounds followed by ``more``'s (same base, same block length)."""
        if more.base != self.base or more.calls != self.calls:
            raise MeasurementError("cannot join paired rounds of another base or block length")
        return self.model_copy(
            update={"base_ms": self.base_ms + more.base_ms, "head_ms": self.head_ms + more.head_ms}
        )


def log_ratios(base_ms: Sequence[float], head_ms: Sequence[float]) -> list[float]:
    """``log(head_i / base_i)`` for each round; both sides must be > 0 and of equal length."""
    if len(base_ms) != len(head_ms):
        raise MeasurementError(f"{len(base_ms)} base rounds but {len(head_ms)} head rounds")
    if any(not (v > 0 and math.isfinite(v)) for v in (*base_ms, *head_ms)):
        raise MeasurementError("paired round times must be finite and > 0")
    return [math.log(h / b) for b, h in zip(base_ms, head_ms, strict=True)]


def _walsh_sorted(values: Sequence[float]) -> torch.Tensor:
    """The n(n+1)/2 Walsh averages ``(x_i + x_j) / 2`` (i <= j), sorted."""
    x = torch.tensor(values, dtype=torch.float64)
    i, j = torch.triu_indices(len(x), len(x))
    return torch.sort((x[i] + x[j]) / 2).values


def _normal_cdf(z: float) -> float:
    return 0.5 * math.erfc(-z / math.sqrt(2.0))


def _normal_quantile(p: float) -> float:
    """Inverse of the standard normal CDF (bisection: exact enough for an interval's width)."""
    lo, hi = -10.0, 10.0
    for _ in range(80):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if _normal_cdf(mid) < p else (lo, mid)
    return (lo + hi) / 2


def hodges_lehmann(values: Sequence[float], ci_level: float = 0.95) -> tuple[float, float, float]:
    """(estimate, low, high): the median of the Walsh averages and its Wilcoxon signed-rank
    interval (the order statistics the normal approximation of the signed-rank test gives)."""
    n = len(values)
    if n < 2:
        raise MeasurementError("a paired estimate needs at least 2 rounds")
    walsh = _walsh_sorted(values)
    total = walsh.numel()
    estimate = quantile(walsh.tolist(), 0.5) if total < 4096 else float(torch.median(walsh))
    z = _normal_quantile(1 - (1 - ci_level) / 2)
    c = math.floor(total / 2 - z * math.sqrt(n * (n + 1) * (2 * n + 1) / 24))
    c = min(max(c, 0), (total - 1) // 2)
    return estimate, float(walsh[c]), float(walsh[total - 1 - c])


def signed_rank_p(values: Sequence[float], shift: float) -> float:
    """One-sided p-value of the Wilcoxon signed-rank test against "the median of ``values`` is
    at most ``shift``" (normal approximation with the tie correction; zero differences drop)."""
    d = torch.tensor([v - shift for v in values if v != shift], dtype=torch.float64)
    n = d.numel()
    if n == 0:
        return 1.0
    absd = d.abs()
    order = torch.argsort(absd)
    ranks = torch.empty(n, dtype=torch.float64)
    ranks[order] = torch.arange(1, n + 1, dtype=torch.float64)
    # Tied magnitudes share their mean rank.
    uniq, inverse, counts = torch.unique(absd, return_inverse=True, return_counts=True)
    if len(uniq) < n:
        sums = torch.zeros(len(uniq), dtype=torch.float64).index_add_(0, inverse, ranks)
        ranks = (sums / counts)[inverse]
    t_plus = float(ranks[d > 0].sum())
    mean = n * (n + 1) / 4
    ties = float((counts.to(torch.float64) ** 3 - counts).sum()) / 48
    var = n * (n + 1) * (2 * n + 1) / 24 - ties
    if var <= 0:
        return 0.0 if t_plus > mean else 1.0
    # Continuity correction of one half rank.
    return 1.0 - _normal_cdf((t_plus - mean - 0.5) / math.sqrt(var))


def compare_paired(
    timing: PairedTiming,
    *,
    tolerance: float = DEFAULT_TOLERANCE,
    alpha: float = DEFAULT_ALPHA,
    ci_level: float = 0.95,
) -> PairedComparison:
    """The verdict on the head against the base from paired rounds, by the stored-baseline
    comparison's rule (:func:`~pytest_modelprof.runtime.noise.decide`):

    * ``slowdown`` is ``exp(HL) - 1`` of the paired log-ratios, its interval ``exp`` of the
      Wilcoxon interval minus one;
    * ``p_slower`` tests "not slower than ``tolerance``" (median log-ratio at most
      ``log(1 + tolerance)``), ``p_faster`` the mirror at ``log(1 - tolerance)``.

    A level shared by both sides (a busier session) multiplies both times of a round and so
    cancels in every ratio.
    """
    if not (0 <= tolerance and math.isfinite(tolerance)):
        raise SettingsError(f"tolerance must be a finite fraction >= 0, got {tolerance}")
    if not 0 < alpha < 1:
        raise SettingsError(f"alpha must be in (0, 1), got {alpha}")
    ratios = log_ratios(timing.base_ms, timing.head_ms)
    est, low, high = hodges_lehmann(ratios, ci_level)
    p_slower = signed_rank_p(ratios, math.log1p(tolerance))
    if tolerance < 1:
        p_faster = signed_rank_p([-r for r in ratios], -math.log1p(-tolerance))
    else:
        p_faster = 1.0
    slowdown = math.expm1(est)
    verdict = decide(slowdown, p_slower, p_faster, tolerance=tolerance, alpha=alpha)
    confidence = {
        "regressed": 1 - p_slower,
        "improved": 1 - p_faster,
        "inconclusive": max(1 - p_slower, 1 - p_faster),
        "unchanged": max(0.0, p_slower + p_faster - 1),
    }[verdict]
    return PairedComparison(
        verdict=verdict,
        slowdown=slowdown,
        ci_low=math.expm1(low),
        ci_high=math.expm1(high),
        ci_level=ci_level,
        p_slower=p_slower,
        p_faster=p_faster,
        confidence=confidence,
        quantile=1.0 / timing.calls,
        tolerance=tolerance,
        alpha=alpha,
        rounds_current=timing.rounds,
        rounds_baseline=timing.rounds,
        normalised=False,
        baseline_ms=quantile(sorted(timing.base_ms), 0.5),
        current_ms=quantile(sorted(timing.head_ms), 0.5),
        paired_base=timing.base,
    )


def paired_round_cap(max_calls: int, calls: int, first: int) -> int:
    """The most paired rounds of ``calls``-call blocks within ``max_calls`` timed calls of the
    model in all, the unit of the stored-baseline mode's cap (a round there times one call, a
    paired round a block on each side); never fewer than ``first``, the first look's."""
    return max(first, max_calls // (2 * max(calls, 1)))


def compare_paired_sequential(
    measure: Callable[[int], PairedTiming],
    *,
    rounds: int = 100,
    max_rounds: int | None = None,
    tolerance: float = DEFAULT_TOLERANCE,
    alpha: float = DEFAULT_ALPHA,
    first: int | None = None,
    step: int | None = None,
) -> tuple[PairedTiming, LatencyComparison]:
    """``first`` paired rounds from ``measure(n)`` (default ``rounds``), then ``step`` more
    (default ``first``) while the verdict is undecided or its interval straddles a limit, up
    to ``max_rounds`` (default :data:`~pytest_modelprof.runtime.noise.DEFAULT_MAX_ROUNDS_FACTOR`
    x ``rounds``, as the stored-baseline mode)."""
    limit = max_rounds if max_rounds is not None else DEFAULT_MAX_ROUNDS_FACTOR * rounds
    first = min(first or rounds, limit)
    step = step or first
    if first < 2:  # first is at most limit already
        raise SettingsError(f"need 2 <= rounds <= max_rounds, got {first} and {limit}")
    timing = measure(first)
    comparison = compare_paired(timing, tolerance=tolerance, alpha=alpha)
    while needs_more_rounds(comparison) and timing.rounds < limit:
        timing = timing.extended(measure(min(step, limit - timing.rounds)))
        comparison = compare_paired(timing, tolerance=tolerance, alpha=alpha)
    return timing, comparison


class PairedUnavailable(ModelprofError):
    """No base can be timed for this test; the message says why (the gate falls back to the
    stored baseline and says so)."""


class PairedSource(Protocol):
    """What times a test's model at the base commit and at the head, paired (the session's)."""

    def measure(
        self,
        model: object,
        *,
        input_shape: Sequence[int] | None,
        device: str | None,
        rounds: int,
        tolerance: float,
        max_rounds: int | None = None,
        kwargs: dict[str, Any] | None = None,
    ) -> tuple[PairedTiming, LatencyComparison]:
        """Paired rounds and their verdict, or :class:`PairedUnavailable`."""
        ...


_ACTIVE: list[PairedSource] = []


def use_paired_base(source: PairedSource | None) -> None:
    """Make ``source`` the session's base side (``None``: stored-baseline timing only)."""
    _ACTIVE[:] = [source] if source is not None else []


def paired_base() -> PairedSource | None:
    """The session's base side, if the run asked for one."""
    return _ACTIVE[0] if _ACTIVE else None


@dataclass(frozen=True)
class PairedHead:
    """The head side of paired rounds, as a latency row reads it (block times, ms)."""

    latency_ms: float  # the median round
    fast_ms: float  # the mean of the fastest rounds
    rounds: int


def split_timing(
    timing: Mapping[str, Any],
) -> tuple[NormalisedTiming | PairedHead, PairedComparison | None, str | None]:
    """A test's timing evidence as (the current side, the paired verdict or None, why a
    requested pairing fell back to the stored baseline, or None)."""
    plain = dict(timing)
    fallback = plain.pop("fallback", None)
    if "paired" not in plain:
        return NormalisedTiming.model_validate(plain), None, fallback
    rounds = PairedTiming.model_validate(plain["paired"])
    head = sorted(rounds.head_ms)
    current = PairedHead(quantile(head, 0.5), fast_mean(head, DEFAULT_QUANTILE), rounds.rounds)
    return current, PairedComparison.model_validate(plain["comparison"]), None
