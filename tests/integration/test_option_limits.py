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
    project.pytester.makeini("[pytest]\nmodelprof_max_memory = huge\n")
    project.pytester.makepyfile(test_plain=PLAIN)
    result = project.run()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*ini modelprof_max_memory: bad value for max_memory='huge'*"])


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
    "max_latency_ms": "5",
    "max_memory": "120MB",
    "max_flops": "9G",
    "max_params": "30M",
    "timing_rounds": "20",
    "compile_dynamic": "true",
}
INI_VALUES = {
    "max_latency_ms": "7",
    "max_memory": "1GB",
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
