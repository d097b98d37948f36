"""``--modelprof-baseline-dir`` and its ini twin ``modelprof_baseline_dir``."""

from __future__ import annotations

import json
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
    result = project.pytester.runpytest_subprocess(timeout=120)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        ["*test_x.json: cannot read baseline: it is a named pipe, not a regular file*"]
    )
    assert path.is_fifo()  # refused, not replaced (an update refuses it too: the unit tests)


CLASS_TEST = """
import pytest

class TestR:
    @pytest.mark.profile(model="fake:{key}")
    def test_cost(self):
        pass
"""
MODULE_TEST = """
import pytest

@pytest.mark.profile(model="fake:{key}")
def test_cost():
    pass
"""
IN_CLASS = "tests/test_m.py::TestR::test_cost"
IN_MODULE = "tests/test_m/TestR.py::test_cost"


def _class_and_module(project: Project) -> None:
    """``tests/test_m.py::TestR::test_cost`` and ``tests/test_m/TestR.py::test_cost``: both
    would be ``tests/test_m/TestR/test_cost.json``."""
    project.pytester.makeini("[pytest]\npython_files = test_*.py Test*.py\n")
    (project.root / "tests" / "test_m").mkdir(parents=True)
    (project.root / "tests" / "test_m.py").write_text(CLASS_TEST.format(key="small"))
    (project.root / "tests" / "test_m" / "TestR.py").write_text(MODULE_TEST.format(key="large"))
    project.set_costs(small={"flops": 1_000_000}, large={"flops": 4_000_000})


def test_two_tests_never_share_a_baseline_file(project: Project) -> None:
    _class_and_module(project)
    project.run("--modelprof-update-baselines").assert_outcomes(passed=2)
    files = project.baselines()
    assert len(files) == 2, sorted(files)
    assert {json.loads(text)["test"] for text in files.values()} == {IN_CLASS, IN_MODULE}
    # Each test is judged by its own numbers: the small model growing to the large one's size
    # fails, whichever of the two files it meets.
    project.set_costs(small={"flops": 4_000_000}, large={"flops": 4_000_000})
    result = project.run()
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines([f"*{IN_CLASS}*regressed*"])
    # A run of one module alone finds the same files.
    project.run("tests/test_m/TestR.py").assert_outcomes(passed=1)
    assert project.baselines() == files


def test_ids_that_differ_only_by_case_get_two_files(project: Project) -> None:
    project.pytester.makepyfile(
        test_a="""
        import pytest

        @pytest.mark.profile(model="fake:tiny")
        @pytest.mark.parametrize("p", ["A", "a", "CON", "con"])
        def test_x(p):
            pass

        @pytest.mark.profile(model="fake:tiny")
        def test_Case():
            pass

        @pytest.mark.profile(model="fake:tiny")
        def test_case():
            pass
        """
    )
    project.run("--modelprof-update-baselines").assert_outcomes(passed=6)
    files = project.baselines()
    assert len({rel.lower() for rel in files}) == 6, sorted(files)  # 6 files on macOS too
    project.run().assert_outcomes(passed=6)


def test_a_file_that_holds_another_tests_baseline_fails_both(project: Project) -> None:
    _class_and_module(project)
    # What an older version left: both tests wrote tests/test_m/TestR/test_cost.json, and the
    # last one to write it won.
    shared = project.root / "baselines" / "tests" / "test_m" / "TestR" / "test_cost.json"
    project.run("--modelprof-update-baselines", "tests/test_m/TestR.py").assert_outcomes(passed=1)
    assert list(project.baselines()) == ["tests/test_m/TestR/test_cost.json"]
    assert json.loads(shared.read_text())["test"] == IN_MODULE
    before = project.baselines()
    result = project.run()
    result.assert_outcomes(failed=2)
    result.stdout.fnmatch_lines([f"*{IN_CLASS}*{IN_MODULE}*", f"*{IN_MODULE}*{IN_CLASS}*"])
    alone = project.run("tests/test_m.py")  # a run that does not collect the other test
    alone.assert_outcomes(failed=1)
    alone.stdout.fnmatch_lines(
        [f"*tests/test_m/TestR/test_cost.json holds the baseline of {IN_MODULE}*"]
    )
    assert project.baselines() == before  # nothing written, nothing lost
    # An update gives each its own file and never overwrites the other's.
    project.run("--modelprof-update-baselines", "tests/test_m.py").assert_outcomes(passed=1)
    assert json.loads(shared.read_text())["test"] == IN_MODULE
    project.run("--modelprof-update-baselines").assert_outcomes(passed=2)
    project.run().assert_outcomes(passed=2)


def test_names_of_one_test_that_differ_only_by_case_are_refused(project: Project) -> None:
    project.pytester.makepyfile(
        test_a="""
        def test_x(modelprof):
            modelprof("fake:tiny", name="Head")
            modelprof("fake:tiny", name="head")
        """
    )
    result = project.run("--modelprof-update-baselines")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*name='head' and name='Head' differ only by case*"])
    assert project.baselines() == {}
