"""What the paired verdict refuses: settings out of range and rounds that cannot be joined,
each said in the message; and a tie in every round is no evidence either way."""

from __future__ import annotations

import pytest

from pytest_modelprof.errors import MeasurementError, SettingsError
from pytest_modelprof.runtime.paired import (
    PairedTiming,
    compare_paired,
    compare_paired_sequential,
    hodges_lehmann,
    signed_rank_p,
)

TIMING = PairedTiming(base="abc", base_ms=[1.0, 1.1, 0.9], head_ms=[1.0, 1.2, 0.95])


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"tolerance": -0.1}, "tolerance must be a finite fraction >= 0, got -0.1"),
        ({"tolerance": float("inf")}, "tolerance must be a finite fraction >= 0, got inf"),
        ({"alpha": 1.0}, r"alpha must be in \(0, 1\), got 1.0"),
    ],
)
def test_a_setting_out_of_range_is_refused_naming_it(
    kwargs: dict[str, float], message: str
) -> None:
    with pytest.raises(SettingsError, match=message):
        compare_paired(TIMING, **kwargs)


def test_a_tolerance_of_100_percent_or_more_cannot_be_faster() -> None:
    # Faster by 100 % would take no time: there is no "faster" side to test.
    assert compare_paired(TIMING, tolerance=1.0).p_faster == 1.0


def test_rounds_of_another_base_or_block_length_are_not_joined() -> None:
    other = PairedTiming(base="def", base_ms=[1.0], head_ms=[1.0])
    with pytest.raises(MeasurementError, match="another base or block length"):
        TIMING.extended(other)
    longer = PairedTiming(base="abc", base_ms=[1.0], head_ms=[1.0], calls=2)
    with pytest.raises(MeasurementError, match="another base or block length"):
        TIMING.extended(longer)


def test_one_round_gives_no_paired_estimate() -> None:
    with pytest.raises(MeasurementError, match="needs at least 2 rounds"):
        hodges_lehmann([0.1])


def test_fewer_than_two_rounds_at_the_first_look_are_refused() -> None:
    with pytest.raises(SettingsError, match="need 2 <= rounds <= max_rounds, got 1 and 8"):
        compare_paired_sequential(lambda n: TIMING, rounds=1)
    # A cap below the first look lowers the look to the cap: 1 round is still too few.
    with pytest.raises(SettingsError, match="got 1 and 1"):
        compare_paired_sequential(lambda n: TIMING, rounds=10, max_rounds=1)


def test_rounds_that_all_equal_the_shift_give_no_evidence() -> None:
    assert signed_rank_p([0.0, 0.0, 0.0], 0.0) == 1.0
