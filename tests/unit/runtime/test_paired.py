"""The paired verdict: hand-made base and head rounds, judged by the paired log-ratios."""

from __future__ import annotations

import math
import random

import pytest

from pytest_modelprof.runtime.paired import (
    PairedTiming,
    abba_sides,
    compare_paired,
    compare_paired_sequential,
    hodges_lehmann,
    paired_round_cap,
    signed_rank_p,
)
from pytest_modelprof.runtime.verdicts import latency_gate


def _session(
    slowdown: float, *, level: float = 1.0, rounds: int = 100, seed: int = 0, noise: float = 0.03
) -> PairedTiming:
    """Rounds around 1 ms times ``level`` (the session's speed, shared by both sides), each side
    with its own jitter and, now and then, a round a busy neighbour hit on one side only."""
    rng = random.Random(seed)
    base, head = [], []
    for _ in range(rounds):
        drift = level * (1 + 0.2 * rng.random())  # shared within a round: cancels in the ratio
        b = drift * (1 + noise * rng.random())
        h = drift * (1 + slowdown) * (1 + noise * rng.random())
        if rng.random() < 0.1:
            b *= 1 + rng.random()  # preempted: only ever adds time
        if rng.random() < 0.1:
            h *= 1 + rng.random()
        base.append(b)
        head.append(h)
    return PairedTiming(base="abc1234", base_ms=base, head_ms=head)


def test_abba_order_puts_each_side_first_in_every_other_round() -> None:
    orders = [abba_sides(i) for i in range(4)]
    assert orders == [("base", "head"), ("head", "base"), ("base", "head"), ("head", "base")]


def test_a_session_level_shared_by_both_sides_cancels() -> None:
    quiet = compare_paired(_session(0.0, level=1.0))
    busy = compare_paired(_session(0.0, level=1.25))  # the whole session 25 % slower
    assert quiet.verdict == busy.verdict == "unchanged"
    assert busy.slowdown == pytest.approx(quiet.slowdown, abs=1e-9)
    assert busy.ci_low == pytest.approx(quiet.ci_low, abs=1e-9)


def test_a_15_percent_slower_head_is_regressed_and_fails_the_gate() -> None:
    comparison = compare_paired(_session(0.15, level=1.3), tolerance=0.08)
    assert comparison.verdict == "regressed"
    assert 0.10 < comparison.slowdown < 0.20
    assert comparison.ci_low > 0.08
    assert comparison.paired_base == "abc1234"
    decision = latency_gate(comparison)
    assert decision.action == "fail"
    assert "paired with base abc1234" in decision.reasons[0]


def test_a_faster_head_is_improved_and_an_unchanged_one_passes() -> None:
    assert compare_paired(_session(-0.2)).verdict == "improved"
    unchanged = compare_paired(_session(0.0, seed=3))
    assert unchanged.verdict == "unchanged"
    assert latency_gate(unchanged).action == "ok"


def test_too_few_rounds_near_the_limit_are_inconclusive() -> None:
    ratios = [1.30, 0.95, 1.25, 1.0, 1.20, 1.05]  # +12 % at the centre, spread over +-15 %
    timing = PairedTiming(base="x", base_ms=[2.0] * 6, head_ms=[2.0 * r for r in ratios])
    comparison = compare_paired(timing, tolerance=0.08)
    assert comparison.slowdown > 0.08
    assert comparison.verdict == "inconclusive"
    assert latency_gate(comparison).action == "ok"
    assert latency_gate(comparison).notes


def test_hodges_lehmann_of_a_symmetric_sample_is_its_centre_with_an_interval_around_it() -> None:
    est, low, high = hodges_lehmann([0.1 + d for d in (-0.02, -0.01, 0.0, 0.01, 0.02)] * 4)
    assert est == pytest.approx(0.1)
    assert low < 0.1 < high


def test_signed_rank_p_is_small_only_when_the_values_lie_above_the_shift() -> None:
    above = [0.2 + 0.01 * i for i in range(30)]
    assert signed_rank_p(above, 0.0) < 1e-4
    assert signed_rank_p(above, 1.0) > 0.999


def test_sequential_measures_more_only_while_undecided_and_stops_at_the_cap() -> None:
    asked: list[int] = []

    def measure(n: int) -> PairedTiming:
        asked.append(n)
        return _session(0.08, rounds=n, seed=len(asked), noise=0.2)

    timing, comparison = compare_paired_sequential(measure, rounds=10, max_rounds=35)
    assert timing.rounds == sum(asked) <= 35
    assert asked[0] == 10
    clear: list[int] = []

    def measure_clear(n: int) -> PairedTiming:
        clear.append(n)
        return _session(0.5, rounds=n, seed=7)

    _, verdict = compare_paired_sequential(measure_clear, rounds=20, max_rounds=160)
    assert verdict.verdict == "regressed"
    assert clear == [20]


def test_bad_rounds_are_refused_with_the_reason() -> None:
    with pytest.raises(ValueError, match="finite and > 0"):
        compare_paired(PairedTiming(base="x", base_ms=[1.0, 0.0], head_ms=[1.0, 1.0]))
    with pytest.raises(ValueError, match="2 base rounds but 1 head"):
        compare_paired(PairedTiming(base="x", base_ms=[1.0, 1.0], head_ms=[1.0]))
    assert math.isfinite(compare_paired(_session(0.0, rounds=2)).slowdown)


def test_the_first_look_comes_early_and_later_ones_in_smaller_steps() -> None:
    """A clear case is decided at the first look, an undecided one looks again every ``step``
    rounds up to the cap: what keeps the paired mode's cost near the stored-baseline mode's."""
    asked: list[int] = []

    def measure(n: int) -> PairedTiming:
        asked.append(n)
        return _session(0.08, rounds=n, seed=len(asked), noise=0.2)

    timing, _ = compare_paired_sequential(measure, rounds=100, max_rounds=45, first=20, step=10)
    assert asked[0] == 20 and set(asked[1:]) <= {10, 5} and timing.rounds == sum(asked) <= 45
    clear: list[int] = []

    def measure_clear(n: int) -> PairedTiming:
        clear.append(n)
        return _session(0.5, rounds=n, seed=3)

    _, verdict = compare_paired_sequential(measure_clear, rounds=100, first=20, step=10)
    assert verdict.verdict == "regressed" and clear == [20]


@pytest.mark.parametrize(
    ("max_calls", "calls", "first", "cap"),
    [
        (800, 8, 10, 50),  # two 8-call blocks a round use 16 of the 800 calls
        (800, 1, 10, 400),  # one call a block: two calls a round
        (800, 40, 10, 10),  # 20 rounds' worth of calls, but the first look takes 10 rounds
        (64, 806, 2, 2),  # less than one block: the first look still happens
    ],
)
def test_the_round_cap_counts_timed_calls_of_both_sides(
    max_calls: int, calls: int, first: int, cap: int
) -> None:
    assert paired_round_cap(max_calls, calls, first) == cap
