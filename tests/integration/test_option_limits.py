"""Default limits from the CLI and the ini file; precedence marker > CLI > ini > built-in."""

from __future__ import annotations

import pytest
from modelprof_testing import Project

from pytest_modelprof.gate.settings import BOOL_KEYS, LIMIT_NAMES, cli_flag, ini_key

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


def test_builtin_default_is_exact(project: Project) -> None:
    _grow(project)
    project.run().assert_outcomes(failed=2)


def test_ini_default(project: Project) -> None:
    _grow(project)
    project.pytester.makeini(
        "[pytest]\nmodelprof_max_flops_delta = 25%\nmodelprof_max_macs_delta = 0.25\n"
    )
    result = project.run()
    result.assert_outcomes(passed=1, failed=1)  # the marker's 1 % beats the ini's 25 %
    result.stdout.fnmatch_lines(["*FAILED test_marked.py::test_marked*"])


def test_cli_beats_ini(project: Project) -> None:
    _grow(project)
    project.pytester.makeini("[pytest]\nmodelprof_max_flops_delta = 0.01\n")
    result = project.run("--modelprof-max-flops-delta=0.3", "--modelprof-max-macs-delta=0.3")
    result.assert_outcomes(passed=1, failed=1)


def test_cli_budget(project: Project) -> None:
    project.pytester.makepyfile(test_plain=PLAIN)
    result = project.run("--modelprof-update-baselines", "--modelprof-max-flops=100K")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*over budget max_flops=100 KFLOPs*"])


def test_bad_cli_value_is_a_usage_error(project: Project) -> None:
    project.pytester.makepyfile(test_plain=PLAIN)
    result = project.run("--modelprof-max-flops-delta=lots")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        ["*pytest-modelprof: --modelprof-max-flops-delta: bad value for max_flops_delta='lots'*"]
    )


def test_bad_ini_value_names_the_key(project: Project) -> None:
    project.pytester.makeini("[pytest]\nmodelprof_max_traffic = huge\n")
    project.pytester.makepyfile(test_plain=PLAIN)
    result = project.run()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*ini modelprof_max_traffic: bad value for max_traffic='huge'*"])


# An inner test that fails unless the session's limits, the base every marker is resolved over
# and the judge receives, are exactly the built-in ones changed by this one value.
REACHES = """
from pytest_modelprof._plugin_parts import SESSION_KEY
from pytest_modelprof.gate.settings import Limits


def test_the_value_reaches_the_limits(request):
    limits = request.config.stash[SESSION_KEY].settings.limits
    expected = Limits().with_values({{{key!r}: {value!r}}}, "expected")
    assert expected != Limits()
    assert limits == expected
"""
# A value for each limit unlike its ini value below, so the run shows the flag's value won.
CLI_VALUES = {
    "max_latency": "5ms",
    "max_predicted_time": "3ms",
    "max_traffic": "120MB",
    "max_flops": "9G",
    "max_params": "30M",
    "timing_rounds": "20",
    "compile_dynamic": "true",
}
INI_VALUES = {
    "max_latency": "7ms",
    "max_predicted_time": "0.5s",
    "max_traffic": "1GB",
    "max_flops": "3G",
    "max_params": "2M",
    "timing_rounds": "30",
    "compile_dynamic": "false",
}


@pytest.mark.parametrize("key", [k for k in LIMIT_NAMES if k not in BOOL_KEYS])
def test_every_limit_flag_reaches_the_limits(project: Project, key: str) -> None:
    value = CLI_VALUES.get(key, "0.1")
    project.pytester.makeini(f"[pytest]\n{ini_key(key)} = {INI_VALUES.get(key, '0.3')}\n")
    project.pytester.makepyfile(test_reaches=REACHES.format(key=key, value=value))
    project.run(f"{cli_flag(key)}={value}", "--strict-config").assert_outcomes(passed=1)


@pytest.mark.parametrize("key", BOOL_KEYS)
def test_every_switch_flag_reaches_the_limits(project: Project, key: str) -> None:
    project.pytester.makeini(f"[pytest]\n{ini_key(key)} = false\n")
    project.pytester.makepyfile(test_reaches=REACHES.format(key=key, value="true"))
    project.run(cli_flag(key), "--strict-config").assert_outcomes(passed=1)


def test_a_flag_that_does_not_reach_the_limits_fails_the_check(project: Project) -> None:
    # The check itself can fail: a value other than the flag's is not what the judge receives.
    project.pytester.makepyfile(test_reaches=REACHES.format(key="max_flops_delta", value="0.2"))
    project.run("--modelprof-max-flops-delta=0.1").assert_outcomes(failed=1)
    project.pytester.makepyfile(test_reaches=REACHES.format(key="max_flops_delta", value="0.1"))
    project.run().assert_outcomes(failed=1)  # the flag not given at all


def test_bad_timing_rounds_names_its_source(project: Project) -> None:
    project.pytester.makepyfile(test_plain="def test_nothing():\n    pass\n")
    result = project.run("--modelprof-timing-rounds=3")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--modelprof-timing-rounds: bad value for timing_rounds='3'*"])


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
    project.run("--modelprof-max-flops-delta=10%").assert_outcomes(passed=1)
    assert result.ret == pytest.ExitCode.TESTS_FAILED


@pytest.mark.parametrize(
    ("limit", "message"),
    [
        ("False", "*max_flops_delta=False: a limit is not a switch; write 'ignore' to turn the "
         "check off, or a fraction such as 0.1 or '10%'*"),
        ("True", "*max_flops_delta=True: a limit is not a switch*"),
        ("'none'", "*max_flops_delta='none'*did you mean 'ignore'?*"),
        ("'off'", "*max_flops_delta='off'*did you mean 'ignore'?*"),
        ("10", "*max_flops_delta=10: that would allow +1000 %*did you mean 0.10 (10 %)? "
         "Write '1000%' if you mean +1000 %"),
        ("'10'", "*max_flops_delta='10': that would allow +1000 %*did you mean 0.10 (10 %)?*"),
        ("1.5", "*max_flops_delta=1.5: that would allow +150 %*did you mean 0.015 (1.5 %)?*"),
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
        ("10", "*max_flops_delta='10': that would allow +1000 %*did you mean 0.10 (10 %)?*"),
        ("none", "*max_flops_delta='none'*did you mean 'ignore'?*"),
        ("1" + "0" * 400, "*bad value for max_flops_delta='1000000000*(401 digits)*"),
    ],
)
def test_cli_and_ini_refuse_what_the_marker_refuses(
    project: Project, where: str, value: str, message: str
) -> None:
    project.pytester.makepyfile(test_plain=PLAIN)
    if where == "ini":
        project.pytester.makeini(f"[pytest]\nmodelprof_max_flops_delta = {value}\n")
        result = project.run()
    else:
        result = project.run(f"--modelprof-max-flops-delta={value}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([message])
    assert len([line for line in result.stderr.lines if line.strip()]) == 1, result.stderr.lines


@pytest.mark.parametrize("where", ["cli", "ini"])
def test_cli_and_ini_take_percentages(project: Project, where: str) -> None:
    project.pytester.makepyfile(test_plain=PLAIN)
    project.run("--modelprof-update-baselines").assert_outcomes(passed=1)
    project.set_costs(tiny={"flops": 1_061_000, "ai": 10.0})
    args = ["--modelprof-max-macs-delta=ignore"]
    if where == "ini":
        project.pytester.makeini("[pytest]\nmodelprof_max_flops_delta = 150%\n")
    else:
        args.append("--modelprof-max-flops-delta=150%")
    project.run(*args).assert_outcomes(passed=1)


def test_help_states_the_grammar(project: Project) -> None:
    result = project.run("--help")
    assert result.ret == pytest.ExitCode.OK
    text = " ".join(result.stdout.str().split())
    assert "--modelprof-max-flops-delta=LIMIT default max_flops_delta for every profiled test " \
        "(0.1 or 10%, exact, ignore; 1 or more only as a percentage such as 150%)" in text
