"""The run-wide settings and the limits' merge rules: what a CI writes in its ini file or on the
command line, and how one source's values layer over another's."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_modelprof.baseline.tolerance import Budget, Relative
from pytest_modelprof.errors import SettingsError
from pytest_modelprof.gate.limits import Limits, parse_limit_items
from pytest_modelprof.gate.settings import SessionSettings, instructions_mode, resolve_session

ROOT = Path("/repo")


def session(
    cli: dict[str, object] | None = None, ini: dict[str, object] | None = None
) -> SessionSettings:
    return resolve_session(cli or {}, ini or {}, rootdir=ROOT, invocation_dir=ROOT)


@pytest.mark.parametrize(
    ("cli", "ini", "message"),
    [
        (
            {},
            {"update_baselines": "perhaps"},
            r"^ini modelprof_update_baselines: expected true or false, got 'perhaps'$",
        ),
        (
            {"prune_baselines": "sometimes"},
            {},
            r"^--modelprof-prune-baselines: expected true or false, got 'sometimes'$",
        ),
        ({}, {"fail_on_environment": "2"}, r"^ini modelprof_fail_on_environment: expected true"),
        ({}, {"instructions": "never"}, r"^ini modelprof_instructions: bad value 'never'"),
    ],
)
def test_a_bad_switch_names_its_flag_or_ini_key(
    cli: dict[str, object], ini: dict[str, object], message: str
) -> None:
    with pytest.raises(SettingsError, match=message):
        session(cli, ini)


def test_switches_take_the_command_line_over_the_ini_file() -> None:
    s = session(
        cli={"update_baselines": "", "disable": None, "instructions": "skip"},
        ini={
            "update_baselines": "yes",
            "prune_baselines": "on",
            "disable": "0",
            "fail_on_environment": "true",
            "instructions": "error",
        },
    )
    # "" and None are "not given": the ini file's value holds.
    assert (s.update, s.prune, s.disable, s.fail_on_environment) == (True, True, False, True)
    assert s.instructions == "skip"
    assert session().instructions == "error"


def test_the_ini_limit_list_is_one_item_a_line() -> None:
    # An ini line list arrives as one string: blank lines are skipped, each line is an item.
    s = session(ini={"limit": "max_flops_delta=5%\n\n  max_flops=2G\n"})
    assert s.limits.tolerances["flops"] == Relative(0.05)
    assert s.limits.budgets["flops"] == Budget(2e9)
    assert session(ini={"limit": ""}).limits == Limits()


def test_the_header_says_what_the_run_does() -> None:
    where = Path("/repo/baselines").resolve()
    assert session().header() == f"modelprof: baselines in {where} (check)"
    assert session(cli={"update_baselines": True}).header().endswith("(update)")
    assert session(cli={"fail_on_improvement": True}).header().endswith("(fail on improvement)")
    assert session(ini={"disable": "true"}).header().startswith("modelprof: disabled")


@pytest.mark.parametrize(
    ("items", "message"),
    [
        (
            ["max_flops_delta"],
            r"expected NAME=VALUE such as max_flops_delta=5%, got 'max_flops_delta'",
        ),
        (["=5%"], r"expected NAME=VALUE such as max_flops_delta=5%, got '=5%'"),
        (
            ["timing_rounds=20"],
            r"'timing_rounds' is a setting, not a limit; set it as "
            r"@pytest.mark.profile\(timing_rounds=\.\.\.\)",
        ),
    ],
)
def test_a_bad_limit_item_says_what_to_write(items: list[str], message: str) -> None:
    with pytest.raises(SettingsError, match=rf"^--modelprof-limit: {message}"):
        parse_limit_items(items, "--modelprof-limit")


def test_a_later_source_switches_a_limit_off() -> None:
    # "ignore" on a later level removes the budget and the growth limit of the level below.
    base = Limits().with_values(
        {"max_flops": "9G", "max_flops_growth": 1.2, "compile_dynamic": True}, "ini"
    )
    assert base.budgets == {"flops": Budget(9e9)} and base.growth == {"max_flops_growth": 1.2}
    over = base.with_values(
        {"max_flops": "ignore", "max_flops_growth": "ignore", "compile_dynamic": "auto"}, "marker"
    )
    assert over.budgets == {} and over.growth == {} and over.compile_dynamic is None
    assert "flops" in over.explicit  # switched off on purpose, not left at the default


def test_describe_writes_the_settings_a_baseline_records() -> None:
    limits = Limits().with_values(
        {
            "fvcore": "true",
            "max_latency": "20ms",
            "timing_rounds": 50,
            "max_flops_growth": 1.1,
            "fail_on_uncounted": True,
            "compile_dynamic": False,
        },
        "marker",
    )
    described = limits.describe()
    assert {
        k: described[k]
        for k in (
            "fvcore",
            "max_fvcore_delta",
            "timing_verdicts",
            "timing_rounds",
            "max_flops_growth",
            "fail_on_uncounted",
            "compile_dynamic",
        )
    } == {
        "fvcore": "true",
        "max_fvcore_delta": "+5.0 %",
        "timing_verdicts": "auto",
        "timing_rounds": "50",
        "max_flops_growth": "1.1",
        "fail_on_uncounted": "true",
        "compile_dynamic": "false",
    }
    assert "instructions" not in {k.removeprefix("max_").removesuffix("_delta") for k in described}


def test_the_mode_without_valgrind_comes_from_the_cli_then_the_ini() -> None:
    assert instructions_mode({}, {}) == "error"
    assert instructions_mode({"instructions": None}, {"instructions": "Skip"}) == "skip"
    assert instructions_mode({"instructions": "error"}, {"instructions": "skip"}) == "error"
    with pytest.raises(SettingsError, match="ini modelprof_instructions: bad value 'never'"):
        instructions_mode({}, {"instructions": "never"})
