"""The fvcore cross-check as a row: within the allowed gap it passes, beyond it fails naming
both counts and what fvcore skipped, and a cross-check that could not run fails with why."""

from __future__ import annotations

import dataclasses

from pytest_modelprof.gate.judge import FvcoreEvidence, fvcore_check
from pytest_modelprof.gate.limits import Limits

LIMITS = dataclasses.replace(Limits(), fvcore=True)  # the default gap: 5 %


def test_counts_within_the_gap_pass() -> None:
    (row,) = fvcore_check(FvcoreEvidence(ours_macs=1_000_000, fvcore_macs=1_020_000), LIMITS)
    assert (row.verdict, row.hard) == ("ok", True)
    assert row.delta_text == "2.0 % apart"
    assert row.limit == "max_fvcore_delta=5.0 %"


def test_counts_beyond_the_gap_fail_naming_both_and_the_skipped_ops() -> None:
    evidence = FvcoreEvidence(
        ours_macs=1_200_000, fvcore_macs=1_000_000, skipped={"aten::lstm": 2, "aten::add": 5}
    )
    (row,) = fvcore_check(evidence, LIMITS)
    assert row.verdict == "regressed"
    assert "(20.0 % apart, max_fvcore_delta=5.0 %)" in row.reason
    assert row.reason.endswith("; fvcore skipped aten::add x5, aten::lstm x2")


def test_a_cross_check_that_could_not_run_fails_with_why() -> None:
    (row,) = fvcore_check(FvcoreEvidence(error="fvcore=True: fvcore is not installed"), LIMITS)
    assert (row.verdict, row.hard, row.reason) == (
        "regressed",
        True,
        "fvcore=True: fvcore is not installed",
    )


def test_no_row_unless_asked() -> None:
    evidence = FvcoreEvidence(ours_macs=1, fvcore_macs=2)
    assert fvcore_check(evidence, Limits()) == []
    assert fvcore_check(None, LIMITS) == []
