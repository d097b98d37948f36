"""Stale baselines: listed at the end of a run, removed with ``--modelprof-prune-baselines``."""

from __future__ import annotations

from modelprof_testing import Project

TWO = """
import pytest

@pytest.mark.profile(model="fake:tiny")
def test_keep():
    pass

@pytest.mark.profile(model="fake:tiny")
def test_drop():
    pass
"""
ONE = """
import pytest

@pytest.mark.profile(model="fake:tiny")
def test_keep():
    pass
"""


def test_removed_test_leaves_a_stale_baseline(project: Project) -> None:
    project.pytester.makepyfile(test_a=TWO)
    project.run("--modelprof-update-baselines").assert_outcomes(passed=2)
    project.pytester.makepyfile(test_a=ONE)
    result = project.run()
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        [
            "1 stale baseline(s) in */baselines are used by no test "
            "(remove them with --modelprof-prune-baselines):",
            "  test_a/test_drop.json",
        ]
    )
    assert "test_a/test_drop.json" in project.baselines()  # only listed, never removed silently

    pruned = project.run("--modelprof-prune-baselines")
    pruned.stdout.fnmatch_lines(
        ["removed 1 stale baseline(s) from */baselines:", "  test_a/test_drop.json"]
    )
    assert list(project.baselines()) == ["test_a/test_keep.json"]
    assert "stale baseline" not in project.run().stdout.str()


def test_partial_runs_do_not_report_other_tests(project: Project) -> None:
    project.pytester.makepyfile(test_a=TWO, test_b=ONE)
    project.run("--modelprof-update-baselines").assert_outcomes(passed=3)
    for args in (
        ["-k", "keep"],
        ["test_b.py"],
        ["test_a.py::test_keep"],
        ["-m", "not profile"],
        ["-x", "--deselect", "test_a.py::test_drop"],
    ):
        result = project.run("--modelprof-prune-baselines", *args)
        assert "stale baseline" not in result.stdout.str(), args
    assert len(project.baselines()) == 3


def test_deleted_module_and_dropped_name(project: Project) -> None:
    project.pytester.makepyfile(
        test_a="""
        def test_named(modelprof):
            modelprof("fake:tiny", name="a")
            modelprof("fake:tiny", input_shape=(1, 8), name="b")
        """,
        test_gone=ONE,
    )
    project.run("--modelprof-update-baselines").assert_outcomes(passed=2)
    (project.root / "test_gone.py").unlink()
    project.pytester.makepyfile(
        test_a="""
        def test_named(modelprof):
            modelprof("fake:tiny", name="a")
        """
    )
    result = project.run()
    result.stdout.fnmatch_lines(
        ["2 stale baseline(s)*", "  test_a/test_named@b.json", "  test_gone/test_keep.json"]
    )


def test_skipped_or_failing_tests_keep_their_baselines(project: Project) -> None:
    project.pytester.makepyfile(test_a=TWO)
    project.run("--modelprof-update-baselines")
    project.pytester.makepyfile(
        test_a="""
        import pytest

        @pytest.mark.profile(model="fake:tiny")
        def test_keep():
            pytest.skip("not today")

        @pytest.mark.profile(model="fake:tiny")
        def test_drop():
            assert False
        """
    )
    assert "stale baseline" not in project.run().stdout.str()
