"""One grammar for every limit: fractions, percentages, 'exact', 'ignore' and unit budgets."""

from __future__ import annotations

import pytest

from pytest_modelprof.baseline.tolerance import (
    Budget,
    Exact,
    Ignore,
    Relative,
    format_tolerance,
    parse_budget,
    parse_tolerance,
)
from pytest_modelprof.units import parse_bytes, parse_quantity


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (0.1, Relative(0.1)),
        ("0.1", Relative(0.1)),
        ("10%", Relative(0.1)),
        (" 2.5 % ", Relative(0.025)),
        (0, Exact()),
        ("0", Exact()),
        ("exact", Exact()),
        ("EXACT", Exact()),
        (None, Ignore()),
        ("ignore", Ignore()),
        ("off", Ignore()),
        ("none", Ignore()),
        (Relative(0.3), Relative(0.3)),
    ],
)
def test_parse_tolerance(raw: object, expected: object) -> None:
    assert parse_tolerance(raw) == expected


@pytest.mark.parametrize("raw", ["lots", -0.1, "-5%", float("nan"), float("inf"), True, [0.1]])
def test_parse_tolerance_rejects(raw: object) -> None:
    with pytest.raises(ValueError):
        parse_tolerance(raw)


def test_allows_is_directional() -> None:
    # worse_by is the relative change in the worse direction: +0.1 = 10 % worse
    assert Exact().allows(0.0) and Exact().allows(-0.5) and not Exact().allows(1e-9)
    assert Relative(0.1).allows(0.1) and not Relative(0.1).allows(0.1000001)
    assert Ignore().allows(float("inf"))


def test_relative_rejects_negative() -> None:
    with pytest.raises(ValueError):
        Relative(-0.1)


@pytest.mark.parametrize(
    ("raw", "parse", "limit"),
    [
        ("9G", parse_quantity, 9e9),  # 9 * 10**9 FLOPs
        ("30M", parse_quantity, 30e6),
        (1000, parse_quantity, 1000.0),
        ("120MB", parse_bytes, 120e6),  # decimal prefixes: 1 MB = 10**6 B
        ("1GiB", parse_bytes, 2.0**30),
    ],
)
def test_parse_budget(raw: object, parse: object, limit: float) -> None:
    assert parse_budget(raw, parse) == Budget(limit)  # type: ignore[arg-type]


def test_parse_budget_off_and_errors() -> None:
    assert parse_budget(None, parse_quantity) is None
    assert parse_budget("off", parse_quantity) is None
    with pytest.raises(ValueError):
        parse_budget("lots", parse_quantity)
    with pytest.raises(ValueError):
        parse_budget(True, parse_quantity)
    with pytest.raises(ValueError):
        Budget(-1)


def test_format_tolerance() -> None:
    assert format_tolerance(Relative(0.1)) == "+10.0 %"
    assert format_tolerance(Relative(0.1), drop=True) == "-10.0 %"
    assert format_tolerance(Exact()) == "exact"
    assert format_tolerance(Ignore()) == "ignored"
