"""Latency rows judged paired against a base commit, or against the stored baseline when no base
could be timed: every row says which way it was judged."""

from __future__ import annotations

import random
from typing import Any

from pytest_modelprof.gate.judge import latency_checks
from pytest_modelprof.gate.limits import Limits
from pytest_modelprof.runtime.noise import NormalisedTiming
from pytest_modelprof.runtime.paired import PairedTiming, compare_paired


def _limits(**values: object) -> Limits:
    return Limits().with_values(values, "marker on test_x")


def _paired(slowdown: float, *, rounds: int = 60) -> dict[str, Any]:
    """The evidence the paired measurement leaves: the rounds and their verdict."""
    rng = random.Random(0)
    base = [rng.uniform(0.9, 1.3) for _ in range(rounds)]
    head = [b * (1 + slowdown) * rng.uniform(0.99, 1.01) for b in base]
    timing = PairedTiming(base="0123456789abcdef", base_ms=base, head_ms=head, calls=4)
    comparison = compare_paired(timing, tolerance=0.1)
    return {
        "paired": timing.model_dump(mode="json"),
        "comparison": comparison.model_dump(mode="json"),
    }


def _stored(model_ms: float, seed: int) -> dict[str, Any]:
    rng = random.Random(seed)
    ms = [model_ms * rng.uniform(0.99, 1.01) for _ in range(60)]
    cs = [rng.uniform(0.99, 1.01) for _ in range(60)]
    return NormalisedTiming.from_samples(ms, cs).model_dump(mode="json")


def test_a_paired_slowdown_beyond_the_limit_fails_and_says_paired() -> None:
    # The stored baseline (much slower) would call it improved: the paired rounds decide.
    (row,) = latency_checks(_paired(0.3), _stored(50.0, 1), _limits(max_latency_delta=0.1))
    assert row.verdict == "regressed" and row.failed
    assert "paired with base 0123456789ab in this session" in row.reason
    assert row.detail["judged"] == "paired with base 0123456789abcdef"
    assert "(paired, confidence" in row.delta_text


def test_an_unchanged_head_passes_paired() -> None:
    (row,) = latency_checks(_paired(0.0), _stored(1.0, 1), _limits(max_latency_delta=0.1))
    assert row.verdict == "ok" and not row.failed
    assert row.delta_text.endswith("(paired)")


def test_a_fallback_row_is_judged_by_the_stored_baseline_and_says_why() -> None:
    current = dict(_stored(1.0, 2), fallback="no base at HEAD~1: unknown REF 'HEAD~1'")
    (row,) = latency_checks(current, _stored(1.0, 1), _limits(max_latency_delta=0.1))
    assert row.verdict == "ok"
    assert row.reason.endswith(
        "; judged against the stored baseline, not paired: no base at HEAD~1: unknown REF 'HEAD~1'"
    )
    assert row.detail["judged"] == "stored baseline (no base at HEAD~1: unknown REF 'HEAD~1')"
    assert "(normalised" in row.delta_text


def test_a_budget_is_judged_on_the_heads_rounds() -> None:
    (row,) = latency_checks(_paired(0.0), None, _limits(max_latency="0.5ms"))
    assert row.verdict == "regressed" and row.hard  # every head round is over 0.5 ms
