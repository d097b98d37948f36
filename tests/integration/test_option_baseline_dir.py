"""``--modelprof-baseline-dir`` and its ini twin ``modelprof_baseline_dir``."""

from __future__ import annotations

import os

import pytest
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


def test_long_test_and_profile_names_still_get_a_baseline(project: Project) -> None:
    # 150 characters of function name and 150 of name=: together far over the 255 bytes a
    # file name may have, so both parts are shortened, each keeping its start and a hash.
    func, name = "test_" + "f" * 145, "n" * 150
    project.pytester.makepyfile(
        test_a=f"""
        def {func}(modelprof):
            modelprof("fake:tiny", name="{name}")
            modelprof("fake:tiny", name="{name}x")
        """
    )
    project.run("--modelprof-update-baselines").assert_outcomes(passed=1)
    files = list(project.baselines())
    assert len(files) == 2
    for rel in files:
        leaf = rel.split("/")[-1]
        assert len(leaf.encode()) <= 255 and leaf.startswith("test_fff") and "@nnn" in leaf
    project.run().assert_outcomes(passed=1)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no named pipes on this OS")
def test_a_named_pipe_at_a_baseline_path_is_refused(project: Project) -> None:
    # A subprocess with a timeout: a run that waits on the pipe must not hang the suite.
    project.pytester.makepyfile(test_a=TEST)
    project.run("--modelprof-update-baselines").assert_outcomes(passed=1)
    path = project.root / "baselines" / "test_a" / "test_x.json"
    path.unlink()
    os.mkfifo(path)  # reading it would wait for a writer forever
    for args in ((), ("--modelprof-update-baselines",)):
        result = project.pytester.runpytest_subprocess(*args, timeout=120)
        result.assert_outcomes(failed=1)
        result.stdout.fnmatch_lines(
            ["*test_x.json: cannot read baseline: it is a named pipe, not a regular file*"]
        )
    assert path.is_fifo()  # refused, not replaced
