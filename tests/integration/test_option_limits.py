"""Limits for every test: ``--modelprof-limit NAME=VALUE`` (repeatable) and the ``modelprof_limits``
ini list, in the marker's grammar; precedence marker > CLI > ini > built-in."""

from __future__ import annotations

import pytest
from modelprof_testing import Project

from pytest_modelprof._options import OPTIONS, Option
from pytest_modelprof.errors import SettingsError
from pytest_modelprof.gate.limits import BUILTIN_LIMIT_NAMES, SETTINGS, Limits

PLAIN = """
import pytest

@pytest.mark.profile(model="fake:tiny")
def test_plain():
    pass
"""
MARKED = """
import pytest

@pytest.mark.profile(model="fake:tiny", max_flops_delta=0.01, max_macs_delta=0.01)
def test_marked():
    pass
"""


def _grow(project: Project) -> None:
    project.pytester.makepyfile(test_plain=PLAIN, test_marked=MARKED)
    project.run("--modelprof-update-baselines").assert_outcomes(passed=2)
    project.set_costs(tiny={"flops": 1_200_000, "ai": 10.0})  # +20 % FLOPs and MACs


def _ini(*lines: str) -> str:
    return "[pytest]\nmodelprof_limits =\n" + "".join(f"    {line}\n" for line in lines)


def test_builtin_default_is_exact(project: Project) -> None:
    _grow(project)
    project.run().assert_outcomes(failed=2)


@pytest.mark.parametrize(("delta", "passed"), [("0.01", 0), ("25%", 1)])
def test_a_limit_flag_reaches_the_judge(project: Project, delta: str, passed: int) -> None:
    _grow(project)
    result = project.run(
        "--modelprof-limit", f"max_flops_delta={delta}", f"--modelprof-limit=max_macs_delta={delta}"
    )
    result.assert_outcomes(passed=passed, failed=2 - passed)  # the marker's 1 % always fails


@pytest.mark.parametrize(("delta", "passed"), [("0.01", 0), ("25%", 1)])
def test_the_ini_list_reaches_the_judge(project: Project, delta: str, passed: int) -> None:
    _grow(project)
    project.pytester.makeini(_ini(f"max_flops_delta = {delta}", f"max_macs_delta={delta}"))
    result = project.run("--strict-config")
    result.assert_outcomes(passed=passed, failed=2 - passed)
    result.stdout.fnmatch_lines(["*FAILED test_marked.py::test_marked*"])


def test_cli_beats_ini(project: Project) -> None:
    _grow(project)
    project.pytester.makeini(_ini("max_flops_delta = 0.01", "max_macs_delta = 0.01"))
    result = project.run("--modelprof-limit=max_flops_delta=0.3", "--modelprof-limit",
                         "max_macs_delta=0.3")
    result.assert_outcomes(passed=1, failed=1)


@pytest.mark.parametrize(("budget", "passed"), [("100K", 0), ("9G", 1)])
def test_cli_budget(project: Project, budget: str, passed: int) -> None:
    project.pytester.makepyfile(test_plain=PLAIN)
    result = project.run("--modelprof-update-baselines", f"--modelprof-limit=max_flops={budget}")
    result.assert_outcomes(passed=passed, failed=1 - passed)
    if not passed:
        result.stdout.fnmatch_lines(["*over budget max_flops=100 KFLOPs*"])


def test_bad_cli_value_is_a_usage_error(project: Project) -> None:
    project.pytester.makepyfile(test_plain=PLAIN)
    result = project.run("--modelprof-limit=max_flops_delta=lots")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        ["*pytest-modelprof: --modelprof-limit: bad value for max_flops_delta='lots'*"]
    )


def test_bad_ini_value_names_the_list(project: Project) -> None:
    project.pytester.makeini(_ini("max_flops_delta = 5%", "max_params = huge"))
    project.pytester.makepyfile(test_plain=PLAIN)
    result = project.run()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*ini modelprof_limits: bad value for max_params='huge'*"])


@pytest.mark.parametrize("where", ["cli", "ini"])
def test_a_mistyped_name_gets_the_nearest_and_its_source(project: Project, where: str) -> None:
    project.pytester.makepyfile(test_plain=PLAIN)
    if where == "ini":
        project.pytester.makeini(_ini("max_flop_delta = 5%"))
        result = project.run()
    else:
        result = project.run("--modelprof-limit", "max_flop_delta=5%")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    source = "ini modelprof_limits" if where == "ini" else "--modelprof-limit"
    result.stderr.fnmatch_lines(
        [f"*pytest-modelprof: {source}: 'max_flop_delta' is not a limit; "
         "did you mean 'max_flops_delta'*"]
    )


def test_no_limit_has_a_flag_of_its_own(project: Project) -> None:
    project.pytester.makepyfile(test_plain=PLAIN)
    result = project.run("--modelprof-max-flops-delta=0.1")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*unrecognized arguments: --modelprof-max-flops-delta=0.1*"])


# An inner test that fails unless the session's limits, the base every marker is resolved over
# and the judge receives, are exactly the built-in ones changed by this one value.
REACHES = """
from pytest_modelprof._plugin_parts import SESSION_KEY
from pytest_modelprof.gate.limits import Limits


def test_the_value_reaches_the_limits(request):
    limits = request.config.stash[SESSION_KEY].settings.limits
    expected = Limits().with_values({{{key!r}: {value!r}}}, "expected")
    assert expected != Limits()
    assert limits == expected
"""


def _accepted(key: str, *candidates: str) -> str:
    """The first of ``candidates`` that ``key`` takes (a fraction, a time, an exponent...)."""
    for value in candidates:
        try:
            Limits().with_values({key: value}, "probe")
        except SettingsError:
            continue
        return value
    raise AssertionError(f"no candidate value for {key}")


# A value for each limit unlike its ini value, so a run shows the flag's value won.
@pytest.mark.parametrize("key", BUILTIN_LIMIT_NAMES)
def test_every_limit_reaches_the_limits_from_the_flag(project: Project, key: str) -> None:
    value = _accepted(key, "0.1", "5ms")
    project.pytester.makeini(_ini(f"{key} = {_accepted(key, '0.3', '7ms')}"))
    project.pytester.makepyfile(test_reaches=REACHES.format(key=key, value=value))
    project.run(f"--modelprof-limit={key}={value}", "--strict-config").assert_outcomes(passed=1)


@pytest.mark.parametrize("key", BUILTIN_LIMIT_NAMES)
def test_every_limit_reaches_the_limits_from_the_ini_list(project: Project, key: str) -> None:
    value = _accepted(key, "0.3", "7ms")
    project.pytester.makeini(_ini("max_flops_delta = 0.2", f"{key} = {value}"))
    earlier = "Limits().with_values({{'max_flops_delta': 0.2}}, 'x')"
    inner = REACHES.replace("Limits().with_values(", f"{earlier}.with_values(")
    if key == "max_flops_delta":  # the later line wins
        inner = REACHES
    project.pytester.makepyfile(test_reaches=inner.format(key=key, value=value))
    project.run("--strict-config").assert_outcomes(passed=1)


# The settings a CI sets run-wide: a flag (and mostly an ini key) of their own, not limits.
GLOBAL_SETTINGS = [o for o in OPTIONS if o.key in SETTINGS]


@pytest.mark.parametrize("option", GLOBAL_SETTINGS, ids=lambda o: o.key)
def test_every_global_setting_reaches_the_limits(project: Project, option: Option) -> None:
    choices = option.argparse.get("choices")
    value = str(choices[0]) if choices else "true"
    args = [f"{option.flag}={value}"] if choices else [option.flag]
    if option.ini is not None:
        other = str(choices[-1]) if choices else "false"
        project.pytester.makeini(f"[pytest]\nmodelprof_{option.ini} = {other}\n")
    project.pytester.makepyfile(test_reaches=REACHES.format(key=option.key, value=value))
    project.run(*args, "--strict-config").assert_outcomes(passed=1)


def test_a_flag_that_does_not_reach_the_limits_fails_the_check(project: Project) -> None:
    # The check itself can fail: a value other than the flag's is not what the judge receives.
    project.pytester.makepyfile(test_reaches=REACHES.format(key="max_flops_delta", value="0.2"))
    project.run("--modelprof-limit=max_flops_delta=0.1").assert_outcomes(failed=1)
    project.pytester.makepyfile(test_reaches=REACHES.format(key="max_flops_delta", value="0.1"))
    project.run().assert_outcomes(failed=1)  # the flag not given at all


def test_bad_timing_rounds_in_the_marker_names_its_source(project: Project) -> None:
    project.pytester.makepyfile(
        test_plain=PLAIN.replace('model="fake:tiny"', 'model="fake:tiny", timing_rounds=3')
    )
    result = project.run()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*marker on test_plain.py::test_plain: bad value for "
                                 "timing_rounds=3*"])


def test_help_shows_our_options_in_one_short_group(
    project: Project, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    result = project.run("--help")
    assert result.ret == pytest.ExitCode.OK
    ours = [line for line in result.stdout.lines if "modelprof" in line]
    assert len(ours) <= 40, "\n".join(ours)
    text = " ".join(result.stdout.str().split())
    assert "--modelprof-limit=NAME=VALUE a limit for every profiled test, repeatable (a " \
        "marker's wins): max_flops_delta=5%, max_params=30M" in text
    assert "modelprof_limits (linelist): limits for every profiled test, one NAME=VALUE " \
        "per line" in text


# -- None, booleans, "none" and 10 as limits ------------------------------------------------------

SPELLED = """
import pytest

@pytest.mark.profile(model="fake:tiny", max_flops_delta=LIMIT, max_macs_delta="ignore")
def test_spelled():
    pass
"""


def _spelled(project: Project, limit: str) -> pytest.RunResult:
    project.pytester.makepyfile(test_spelled=SPELLED.replace("LIMIT", "'ignore'"))
    project.run("--modelprof-update-baselines").assert_outcomes(passed=1)
    project.pytester.makepyfile(test_spelled=SPELLED.replace("LIMIT", limit))
    project.set_costs(tiny={"flops": 1_061_000, "ai": 10.0})  # +6.1 % FLOPs only
    return project.run()


def test_none_means_the_default_limit_not_off(project: Project) -> None:
    result = _spelled(project, "None")
    result.assert_outcomes(failed=1)  # the default is exact: +6.1 % fails
    result.stdout.fnmatch_lines(["*FLOPs: 1 MFLOPs \u2192 1.06 MFLOPs (+6.1 %, limit exact)*"])


def test_none_keeps_the_cli_limit(project: Project) -> None:
    result = _spelled(project, "None")
    project.run("--modelprof-limit=max_flops_delta=10%").assert_outcomes(passed=1)
    assert result.ret == pytest.ExitCode.TESTS_FAILED


@pytest.mark.parametrize(
    ("limit", "message"),
    [
        ("False", "*max_flops_delta=False: a limit is not a switch; write 'ignore' to turn the "
         "check off, or a fraction such as 0.1 or '10%'*"),
        ("True", "*max_flops_delta=True: a limit is not a switch*"),
        ("'none'", "*max_flops_delta='none'*did you mean 'ignore'?*"),
        ("'off'", "*max_flops_delta='off'*did you mean 'ignore'?*"),
        ("10", "*max_flops_delta=10: that would allow +1000 %*did you mean '0.10'? "
         "Write '1000%' if you mean +1000 %"),
        ("'10'", "*max_flops_delta='10': that would allow +1000 %*did you mean '0.10'?*"),
        ("1.5", "*max_flops_delta=1.5: that would allow +150 %*did you mean '0.015'?*"),
        ("10**400", "*marker on test_spelled.py::test_spelled: bad value for "
         "max_flops_delta=1000000000*(401 digits)*"),
    ],
)
def test_a_mistyped_limit_is_refused_in_one_line(
    project: Project, limit: str, message: str
) -> None:
    result = _spelled(project, limit)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([message])
    assert "Traceback" not in result.stdout.str() and "OverflowError" not in result.stdout.str()


@pytest.mark.parametrize("limit", ["'150%'", "'10%'"])
def test_a_percentage_string_is_taken_at_its_word(project: Project, limit: str) -> None:
    _spelled(project, limit).assert_outcomes(passed=1)


@pytest.mark.parametrize("where", ["cli", "ini"])
@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("10", "*max_flops_delta='10': that would allow +1000 %*did you mean '0.10'?*"),
        ("none", "*max_flops_delta='none'*did you mean 'ignore'?*"),
        ("1" + "0" * 400, "*bad value for max_flops_delta='1000000000*(401 digits)*"),
    ],
)
def test_cli_and_ini_refuse_what_the_marker_refuses(
    project: Project, where: str, value: str, message: str
) -> None:
    project.pytester.makepyfile(test_plain=PLAIN)
    if where == "ini":
        project.pytester.makeini(_ini(f"max_flops_delta = {value}"))
        result = project.run()
    else:
        result = project.run(f"--modelprof-limit=max_flops_delta={value}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([message])
    assert len([line for line in result.stderr.lines if line.strip()]) == 1, result.stderr.lines


@pytest.mark.parametrize("where", ["cli", "ini"])
def test_cli_and_ini_take_percentages(project: Project, where: str) -> None:
    project.pytester.makepyfile(test_plain=PLAIN)
    project.run("--modelprof-update-baselines").assert_outcomes(passed=1)
    project.set_costs(tiny={"flops": 1_061_000, "ai": 10.0})
    args = ["--modelprof-limit=max_macs_delta=ignore"]
    if where == "ini":
        project.pytester.makeini(_ini("max_flops_delta = 150%"))
    else:
        args.append("--modelprof-limit=max_flops_delta=150%")
    project.run(*args).assert_outcomes(passed=1)
