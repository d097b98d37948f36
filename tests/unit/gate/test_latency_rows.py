"""Latency rows from synthetic timing rounds: a limit the user wrote holds.

A decisive slowdown beyond an explicit ``max_latency_delta`` fails; an undecided one warns;
``timing_verdicts='warn'`` keeps warn-only; ``max_latency_delta=0`` means 0; ``"off"`` measures
nothing.
"""

from __future__ import annotations

import random
from typing import Any

import torch.nn as nn

from pytest_modelprof.gate.collect import measure_compile, measure_latency
from pytest_modelprof.gate.judge import latency_checks
from pytest_modelprof.gate.limits import Limits
from pytest_modelprof.gate.request import ProfileRequest
from pytest_modelprof.runtime.noise import NormalisedTiming


def _rounds(model_ms: float, *, seed: int, rounds: int = 60, jitter: float = 0.01) -> Any:
    """``rounds`` rounds of the model and one calibration workload (1.0 ms), ``jitter`` spread."""
    rng = random.Random(seed)
    ms = [model_ms * rng.uniform(1 - jitter, 1 + jitter) for _ in range(rounds)]
    cs = [rng.uniform(1 - jitter, 1 + jitter) for _ in range(rounds)]
    return NormalisedTiming.from_samples(ms, cs).model_dump(mode="json")


def _limits(**values: object) -> Limits:
    return Limits().with_values(values, "marker on test_x")


BASELINE = _rounds(5.0, seed=2)
SLOWER = _rounds(5.0 * 2.26, seed=1)  # +126 %, every round: no noise explains it


def test_a_decisive_slowdown_beyond_an_explicit_limit_fails() -> None:
    (row,) = latency_checks(SLOWER, BASELINE, _limits(max_latency_delta=0.25))
    assert row.verdict == "regressed" and row.failed
    assert row.detail["confidence"] >= 0.95
    assert "limit +25 %" in row.reason


def test_timing_verdicts_warn_keeps_warn_only() -> None:
    limits = _limits(max_latency_delta=0.25, timing_verdicts="warn")
    (row,) = latency_checks(SLOWER, BASELINE, limits)
    assert row.verdict == "warning" and not row.failed
    assert "timing_verdicts='warn'" in row.reason


def test_an_undecided_slowdown_only_warns() -> None:
    # Three rounds a side, wildly spread: +25 % at the fast end, but no evidence.
    noisy = NormalisedTiming.from_samples([5.0, 9.0, 13.0], [1.0] * 3).model_dump(mode="json")
    base = NormalisedTiming.from_samples([4.0, 8.0, 12.0], [1.0] * 3).model_dump(mode="json")
    (row,) = latency_checks(noisy, base, _limits(max_latency_delta=0.1))
    assert row.verdict == "warning" and not row.failed
    strict = _limits(max_latency_delta=0.1, timing_verdicts="fail")
    assert latency_checks(noisy, base, strict)[0].verdict == "warning"  # still undecided


def test_zero_means_zero() -> None:
    five_percent = _rounds(5.0 * 1.05, seed=5)  # decisive: 1 % jitter, 60 rounds
    (row,) = latency_checks(five_percent, BASELINE, _limits(max_latency_delta=0))
    assert row.verdict == "regressed", row.reason
    assert row.limit == "max_latency_delta=+0.0 %"
    (same,) = latency_checks(_rounds(5.0, seed=6), BASELINE, _limits(max_latency_delta=0))
    assert not same.failed


def test_a_latency_limit_set_to_ignore_measures_nothing() -> None:
    request = ProfileRequest(nn.Linear(4, 4), input_shape=(1, 4))
    off = _limits(max_latency_delta="ignore", max_latency="ignore")
    assert measure_latency(request, off) is None
    assert "timing_verdicts" not in off.describe()


def test_a_compile_time_limit_set_to_ignore_compiles_nothing() -> None:
    request = ProfileRequest(nn.Linear(4, 4), input_shape=(1, 4))
    assert measure_compile(request, _limits(max_compile_time_delta="ignore"), None) is None


def test_a_growth_limit_set_to_ignore_sweeps_nothing() -> None:
    from pytest_modelprof.gate.collect import run_sweep
    from pytest_modelprof.gate.marker import resolve_marker

    spec = resolve_marker([], {"max_latency_growth": "ignore"}, Limits(), where="test_x")
    assert spec.limits.growth == {}
    request = ProfileRequest(nn.Linear(4, 4), input_shape=(1, 4))
    assert run_sweep(request, {"batch": [1, 2]}, spec.limits) is None


def test_an_undecided_row_carries_its_confidence_in_the_delta_column_too() -> None:
    # Markdown, HTML and `modelprof compare` tables show the delta column, not the
    # reason; an undecided "+25 %" there must not read as a measured fact.
    noisy = NormalisedTiming.from_samples([5.0, 9.0, 13.0], [1.0] * 3).model_dump(mode="json")
    base = NormalisedTiming.from_samples([4.0, 8.0, 12.0], [1.0] * 3).model_dump(mode="json")
    (row,) = latency_checks(noisy, base, _limits(max_latency_delta=0.1))
    assert row.verdict == "warning"
    sure = f"confidence {row.detail['confidence'] * 100:.0f} %"
    assert sure in row.delta_text and sure in row.reason, (row.delta_text, row.reason)
    (decided,) = latency_checks(SLOWER, BASELINE, _limits(max_latency_delta=0.25))
    assert f"confidence {decided.detail['confidence'] * 100:.0f} %" in decided.delta_text
    (same,) = latency_checks(_rounds(5.0, seed=3), BASELINE, _limits(max_latency_delta=0.25))
    assert "confidence" not in same.delta_text  # unchanged claims none


def test_a_latency_reason_gives_one_pair_of_figures_with_one_arrow() -> None:
    # Seen before: the medians, then the fast-rounds pair, with two arrow styles, in one reason.
    (row,) = latency_checks(SLOWER, BASELINE, _limits(max_latency_delta=0.25))
    assert row.reason.count(" ms") == 1 and row.reason.count("\u2192") == 1, row.reason
    assert "->" not in row.reason and "(fastest 10 %)" in row.reason
    assert not row.reason.startswith("latency")  # the row's label says it: "latency: ..."


def test_an_unchanged_latency_claims_no_confidence() -> None:
    # Seen before: "unchanged" beside "confidence 100 %" read as a contradiction.
    (row,) = latency_checks(_rounds(5.0, seed=3), BASELINE, _limits(max_latency_delta=0.25))
    assert row.verdict == "ok" and "unchanged" in row.reason
    assert "confidence" not in row.reason and "% CI" in row.reason
