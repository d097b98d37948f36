"""The noise-resistant comparison, on synthetic samples (no clocks)."""

from __future__ import annotations

import random

import pytest

from pytest_modelprof.runtime.noise import (
    CALIBRATION_VERSION,
    LatencyComparison,
    NormalisedTiming,
    compare_timings,
    decide,
    latency_gate,
    measure_normalised,
)
from pytest_modelprof.runtime.timing import summarize


def _session(model_ms: float, calib_ms: float, *, seed: int, rounds: int = 60,
             noisy: float = 0.3) -> NormalisedTiming:
    """Rounds with 1 % jitter; a share ``noisy`` of them is disturbed (+20..80 %), as on CI."""
    rng = random.Random(seed)
    ms, cs = [], []
    for _ in range(rounds):
        hit = 1.0 + rng.uniform(0.2, 0.8) if rng.random() < noisy else 1.0
        ms.append(model_ms * hit * rng.uniform(0.99, 1.01))
        cs.append(calib_ms * (1.0 + rng.uniform(0.2, 0.8) if rng.random() < noisy else 1.0)
                  * rng.uniform(0.99, 1.01))
    return NormalisedTiming.from_samples(ms, cs)


def test_unchanged_model_is_unchanged() -> None:
    c = compare_timings(_session(5.0, 1.0, seed=1), _session(5.0, 1.0, seed=2))
    assert c.verdict == "unchanged"
    assert abs(c.slowdown) < 0.03
    assert c.confidence > 0.9
    assert c.normalised


def test_a_slower_runner_is_not_a_regression() -> None:
    # Everything 30 % slower (a slower machine): the calibration absorbs it.
    c = compare_timings(_session(6.5, 1.3, seed=3), _session(5.0, 1.0, seed=4))
    assert c.verdict == "unchanged"
    raw = compare_timings(_session(6.5, 1.3, seed=3).model, _session(5.0, 1.0, seed=4).model)
    assert raw.verdict == "regressed"  # what a raw-milliseconds gate would say


def test_fifteen_percent_slowdown_is_caught() -> None:
    c = compare_timings(_session(5.75, 1.0, seed=5), _session(5.0, 1.0, seed=6))
    assert c.verdict == "regressed"
    assert c.slowdown == pytest.approx(0.15, abs=0.03)
    assert c.ci_low > 0 and c.p_slower < 0.05 and c.confidence > 0.9
    assert "regressed" in c.describe() and "slower" in c.describe()


def test_speedup_is_an_improvement() -> None:
    c = compare_timings(_session(4.0, 1.0, seed=7), _session(5.0, 1.0, seed=8))
    assert c.verdict == "improved" and c.slowdown < -0.15


def test_too_few_rounds_are_inconclusive() -> None:
    # Three rounds a side, wildly spread: a big point estimate but no evidence.
    cur = NormalisedTiming.from_samples([5.0, 9.0, 13.0], [1.0, 1.0, 1.0])
    base = NormalisedTiming.from_samples([4.0, 8.0, 12.0], [1.0, 1.0, 1.0])
    c = compare_timings(cur, base, tolerance=0.05)
    assert c.verdict == "inconclusive"


@pytest.mark.parametrize(
    ("slowdown", "p", "expected"),
    [(0.2, 0.01, "regressed"), (0.2, 0.3, "inconclusive"), (0.05, 0.0, "unchanged"),
     (-0.2, 0.01, "improved")],
)
def test_decision_table(slowdown: float, p: float, expected: str) -> None:
    p_faster = p if slowdown < 0 else 1.0
    p_slower = p if slowdown > 0 else 1.0
    assert decide(slowdown, p_slower, p_faster, tolerance=0.08, alpha=0.05) == expected


def test_statistic_is_the_ratio_of_low_quantiles() -> None:
    # q10 of 1..10 at position 0.9 -> 1.9; calibration all 2.0 -> normalised 0.95
    t = NormalisedTiming.from_samples([float(i) for i in range(1, 11)], [2.0] * 10)
    assert t.normalised == pytest.approx(1.9 / 2.0)
    assert t.calibration_version == CALIBRATION_VERSION and t.rounds == 10


def test_comparisons_are_deterministic() -> None:
    a, b = _session(5.5, 1.0, seed=9), _session(5.0, 1.0, seed=10)
    assert compare_timings(a, b) == compare_timings(a, b)


def test_mismatches_are_errors() -> None:
    t = _session(5.0, 1.0, seed=11)
    with pytest.raises(ValueError, match="raw milliseconds"):
        compare_timings(t, summarize([1.0, 2.0]))
    old = t.model_copy(update={"calibration_version": CALIBRATION_VERSION + 1})
    with pytest.raises(ValueError, match="re-record"):
        compare_timings(t, old)
    with pytest.raises(ValueError, match="calibration round"):
        NormalisedTiming.from_samples([1.0, 2.0], [1.0])


def test_round_trip_json() -> None:
    t = _session(5.0, 1.0, seed=12, rounds=10)
    assert NormalisedTiming.model_validate_json(t.model_dump_json()) == t


def _comparison(verdict: str) -> LatencyComparison:
    base = compare_timings([1.0, 1.0, 1.0], [1.0, 1.0, 1.0])
    return base.model_copy(update={"verdict": verdict, "slowdown": 0.2})


def test_gate_warns_by_default_and_fails_when_strict() -> None:
    regressed = _comparison("regressed")
    assert latency_gate(regressed).action == "warn"
    assert latency_gate(regressed, strict=True).action == "fail"
    assert latency_gate(_comparison("inconclusive"), strict=True).action == "ok"
    over = latency_gate(None, latency_ms=12.0, max_latency_ms=10.0)
    assert over.action == "warn" and "budget of 10 ms" in over.reasons[0]
    assert latency_gate(None, latency_ms=9.0, max_latency_ms=10.0).action == "ok"


def test_measure_normalised_alternates_and_pairs_rounds() -> None:
    order: list[str] = []
    t = measure_normalised(lambda: order.append("m"), rounds=4, warmup=1,
                           calibration=lambda: order.append("c"))
    # warm-up c m, then ABBA: c m | m c | c m | m c
    assert order == ["c", "m", "c", "m", "m", "c", "c", "m", "m", "c"]
    assert t.rounds == 4 and len(t.model.samples) == len(t.calibration.samples) == 4
    with pytest.raises(ValueError, match="rounds"):
        measure_normalised(lambda: None, rounds=1)
