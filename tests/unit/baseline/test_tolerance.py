"""One grammar for every limit: fractions, percentages, 'exact', 'ignore' and unit budgets."""

from __future__ import annotations

import fnmatch

import pytest

from pytest_modelprof.baseline.tolerance import (
    Budget,
    Exact,
    Ignore,
    Relative,
    format_tolerance,
    parse_budget,
    parse_tolerance,
    shown,
)
from pytest_modelprof.errors import SettingsError
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
        ("ignore", Ignore()),
        (" Ignore ", Ignore()),
        ("150%", Relative(1.5)),  # a delta of 1 or more, written as a percentage: meant
        ("100%", Relative(1.0)),
        (0.99, Relative(0.99)),
        (Relative(0.3), Relative(0.3)),
    ],
)
def test_parse_tolerance(raw: object, expected: object) -> None:
    assert parse_tolerance(raw) == expected


@pytest.mark.parametrize("raw", ["lots", -0.1, "-5%", float("nan"), float("inf"), True, [0.1]])
def test_parse_tolerance_rejects(raw: object) -> None:
    with pytest.raises(ValueError):
        parse_tolerance(raw)


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        # None is "not given" to the settings (the default); here it is no limit at all.
        (None, "None is no limit; leave the argument out for the default, or write 'ignore'"),
        (False, "a limit is not a switch; write 'ignore' to turn the check off"),
        (True, "a limit is not a switch"),
        ("none", "'ignore' is the one spelling that turns a check off; did you mean 'ignore'?"),
        ("off", "did you mean 'ignore'?"),
        ("False", "did you mean 'ignore'?"),
        ("ignroe", "did you mean 'ignore'?"),
        ("exat", "did you mean 'exact'?"),
        # 10 is +1000 %: far more often a typo for 10 %.
        (10, "that would allow +1000 %; a delta is a fraction of the baseline (0.1 = 10 %); "
         "did you mean '0.10'? Write '1000%' if you mean +1000 %"),
        ("10", "did you mean '0.10'?"),
        (1, "that would allow +100 %; *; did you mean '0.01'?"),
        (1.5, "did you mean '0.015'?"),
        (250, "that would allow +25000 %; *; write '25000%' if you mean +25000 %"),
        (10**400, "a tolerance must be a finite fraction >= 0"),
        ("1e999%", "a tolerance must be a finite fraction >= 0"),
    ],
)
def test_parse_tolerance_says_what_was_meant(raw: object, message: str) -> None:
    with pytest.raises(ValueError) as caught:
        parse_tolerance(raw)
    text = str(caught.value)
    assert fnmatch.fnmatchcase(text, f"*{message}*"), text


def test_shown_keeps_an_absurd_value_on_one_short_line() -> None:
    assert shown(10**400) == "1000000000\u2026 (401 digits)"
    assert shown("1" + "0" * 400) == "'1000000000\u2026' (401 digits)"
    assert shown("x" * 100).endswith("\u2026 (102 characters)")
    assert shown(0.1) == "0.1"


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
    assert parse_budget("ignore", parse_quantity) is None
    with pytest.raises(ValueError, match="did you mean 'ignore'"):
        parse_budget("off", parse_quantity)
    with pytest.raises(ValueError):
        parse_budget("lots", parse_quantity)
    with pytest.raises(ValueError, match="not a switch"):
        parse_budget(True, parse_quantity)
    with pytest.raises(ValueError, match="finite"):
        parse_budget(10**400, parse_quantity)
    with pytest.raises(ValueError):
        Budget(-1)


def test_format_tolerance() -> None:
    assert format_tolerance(Relative(0.1)) == "+10.0 %"
    assert format_tolerance(Relative(0.1), drop=True) == "-10.0 %"
    assert format_tolerance(Exact()) == "exact"
    assert format_tolerance(Ignore()) == "ignored"


def test_an_integer_too_long_to_print_is_named_by_its_size() -> None:
    # Past Python's digit limit for str() (4,300): repr() itself refuses it.
    assert shown(10**5000) == "an integer of about 5001 digits"


def test_a_budget_of_the_wrong_kind_names_the_kind() -> None:
    with pytest.raises(SettingsError, match="such as '9G', not a list"):
        parse_budget([1], parse_quantity)
    assert parse_budget(Budget(5.0), parse_quantity) == Budget(5.0)  # already read: kept
    assert parse_budget("ignore", parse_quantity) is None
