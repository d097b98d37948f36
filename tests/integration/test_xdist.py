"""Under pytest-xdist: workers profile and write, the controller gathers the summary."""

from __future__ import annotations

import pytest
from modelprof_testing import Project

pytest.importorskip("xdist")

ZOO = """
import pytest

@pytest.mark.parametrize("n", range(6))
@pytest.mark.profile(model="fake:tiny", input_shape=(1, 8))
def test_many(n):
    pass

def test_fixture(modelprof):
    modelprof("fake:tiny", name="a")
    modelprof("fake:tiny", input_shape=(2, 8), name="b")
"""


def test_n2_writes_exactly_what_serial_writes(project: Project) -> None:
    project.pytester.makepyfile(test_zoo=ZOO)
    project.run("--modelprof-update-baselines").assert_outcomes(passed=7)
    serial = project.baselines()
    assert len(serial) == 8
    for path in (project.root / "baselines").rglob("*.json"):
        path.unlink()
    result = project.pytester.runpytest_subprocess("-n", "2", "--modelprof-update-baselines")
    result.assert_outcomes(passed=7)
    assert project.baselines() == serial


def test_n2_flow_and_summary(project: Project) -> None:
    project.pytester.makepyfile(test_zoo=ZOO)
    missing = project.pytester.runpytest_subprocess("-n", "2")
    missing.assert_outcomes(failed=7)
    missing.stdout.fnmatch_lines(["*= modelprof =*", "missing  test_zoo.py::test_fixture@a*"])
    assert project.baselines() == {}
    project.pytester.runpytest_subprocess(
        "-n", "2", "--modelprof-update-baselines"
    ).assert_outcomes(passed=7)
    project.pytester.runpytest_subprocess("-n", "2").assert_outcomes(passed=7)
    project.set_costs(tiny={"flops": 2_000_000})
    regress = project.pytester.runpytest_subprocess("-n", "2")
    regress.assert_outcomes(failed=7)
    regress.stdout.fnmatch_lines(
        [
            "*modelprof: tiny in test_zoo.py::test_many[[]0] regressed against*",
            "*FLOPs: 1 MFLOPs \u2192 2 MFLOPs (+100.0 %, limit exact)*",
            "*= modelprof =*",
            "status     test*",
            "regressed  test_zoo.py::test_fixture@a*",
        ]
    )
    summary = regress.stdout.str().split("= modelprof =")[1]
    assert summary.count("regressed  ") == 8


def test_n2_stale_baselines_are_found(project: Project) -> None:
    project.pytester.makepyfile(test_zoo=ZOO)
    project.pytester.runpytest_subprocess("-n", "2", "--modelprof-update-baselines")
    # One parameter less (kept: a run that does not generate it proves nothing) and one
    # name= less (stale: its test ran without it).
    dropped = '    modelprof("fake:tiny", input_shape=(2, 8), name="b")\n'
    assert dropped in ZOO
    project.pytester.makepyfile(test_zoo=ZOO.replace("range(6)", "range(5)").replace(dropped, ""))
    result = project.pytester.runpytest_subprocess("-n", "2", "--modelprof-prune-baselines")
    result.stdout.fnmatch_lines(
        [
            "kept 1 baseline(s)*not generated in this run:",
            "  test_zoo/test_many[[]5].json",
            "removed 1 stale baseline(s)*",
            "  test_zoo/test_fixture@b.json",
        ]
    )
    assert "test_zoo/test_many[5].json" in project.baselines()


def test_n2_disabled_or_deselected_runs_delete_nothing(project: Project) -> None:
    project.pytester.makepyfile(test_zoo=ZOO)
    project.pytester.runpytest_subprocess("-n", "2", "--modelprof-update-baselines")
    before = project.baselines()
    disabled = project.pytester.runpytest_subprocess(
        "-n", "2", "--modelprof-disable", "--modelprof-prune-baselines"
    )
    assert "stale baseline" not in disabled.stdout.str() and "removed" not in disabled.stdout.str()
    deselected = project.pytester.runpytest_subprocess(
        "-n", "2", "-k", "not fixture", "--modelprof-prune-baselines"
    )
    deselected.stdout.fnmatch_lines(
        ["stale baselines not checked, nothing removed: 1 test(s) deselected*"]
    )
    assert project.baselines() == before
