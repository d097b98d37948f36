"""``--modelprof-baseline-dir`` and its ini twin ``modelprof_baseline_dir``."""

from __future__ import annotations

from modelprof_testing import Project

TEST = """
import pytest

@pytest.mark.profile(model="fake:tiny")
def test_x():
    pass
"""


def test_default_is_baselines_at_rootdir(project: Project) -> None:
    project.pytester.makepyfile(test_a=TEST)
    project.run("--modelprof-update-baselines")
    assert list(project.baselines()) == ["test_a/test_x.json"]


def test_cli(project: Project) -> None:
    project.pytester.makepyfile(test_a=TEST)
    result = project.run("--modelprof-update-baselines", "--modelprof-baseline-dir", "costs/b")
    result.stdout.fnmatch_lines(["modelprof: baselines in */costs/b (update)"])
    assert list(project.baselines("costs/b")) == ["test_a/test_x.json"]
    project.run("--modelprof-baseline-dir=costs/b").assert_outcomes(passed=1)
    project.run().assert_outcomes(failed=1)  # the default dir has nothing


def test_ini_and_cli_precedence(project: Project) -> None:
    project.pytester.makeini("[pytest]\nmodelprof_baseline_dir = from_ini\n")
    project.pytester.makepyfile(test_a=TEST)
    project.run("--modelprof-update-baselines")
    assert list(project.baselines("from_ini")) == ["test_a/test_x.json"]
    project.run("--modelprof-update-baselines", "--modelprof-baseline-dir=from_cli")
    assert list(project.baselines("from_cli")) == ["test_a/test_x.json"]


def test_pyproject_ini_options(project: Project) -> None:
    project.pytester.makepyprojecttoml(
        '[tool.pytest.ini_options]\nmodelprof_baseline_dir = "ci/baselines"\n'
    )
    project.pytester.makepyfile(test_a=TEST)
    project.run("--modelprof-update-baselines")
    assert list(project.baselines("ci/baselines")) == ["test_a/test_x.json"]
