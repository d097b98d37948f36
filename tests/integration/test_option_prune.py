"""Stale baselines: listed at the end of a run, removed with ``--modelprof-prune-baselines``."""

from __future__ import annotations

import pytest
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
    for args in (["test_b.py"], ["test_a.py::test_keep"]):
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


# A real tiny module through the fixture, beside fake-engine markers: under --modelprof-disable
# the fixture still profiles (with the real engine), the markers do nothing.
MIXED = """
import pytest
import torch


@pytest.mark.profile(model="fake:tiny")
def test_keep():
    pass


@pytest.mark.profile(model="fake:tiny")
def test_drop():
    pass


def test_tiny(modelprof):
    modelprof(torch.nn.Linear(4, 2), input_shape=(1, 4), mode="meta")
"""


@pytest.mark.slow
def test_disabled_run_lists_and_removes_nothing(project: Project) -> None:
    # Subprocess runs: inline runs drop torch's lazily imported modules, and a second import
    # of those aborts the process (see test_real_engine.py).
    run = project.pytester.runpytest_subprocess
    project.pytester.makepyfile(test_a=MIXED)
    run("--modelprof-update-baselines").assert_outcomes(passed=3)
    before = project.baselines()
    assert len(before) == 3
    listed = run("--modelprof-disable")
    listed.assert_outcomes(passed=3)
    assert "stale baseline" not in listed.stdout.str()
    pruned = run("--modelprof-disable", "--modelprof-prune-baselines")
    pruned.assert_outcomes(passed=3)
    assert "stale baseline" not in pruned.stdout.str() and "removed" not in pruned.stdout.str()
    assert project.baselines() == before  # every file still there, byte for byte


def test_foreign_json_under_the_baseline_dir_is_never_touched(project: Project) -> None:
    project.pytester.makepyfile(test_a=ONE)
    project.run("--modelprof-update-baselines", "--modelprof-baseline-dir=.").assert_outcomes(
        passed=1
    )
    # JSON the plugin never wrote: one with a "test" key naming a module that does not exist,
    # and a well-formed baseline copied to a place no test maps to.
    foreign = project.root / "fixtures" / "case.json"
    foreign.parent.mkdir()
    foreign.write_text('{"test": "test_gone.py::test_x", "data": [1, 2]}\n')
    copy = project.root / "backup" / "test_a" / "test_keep.json"
    copy.parent.mkdir(parents=True)
    copy.write_bytes((project.root / "test_a" / "test_keep.json").read_bytes())
    before = {p: p.read_bytes() for p in (foreign, copy)}
    result = project.run("--modelprof-baseline-dir=.", "--modelprof-prune-baselines")
    result.assert_outcomes(passed=1)
    assert "stale baseline" not in result.stdout.str() and "removed" not in result.stdout.str()
    assert {p: p.read_bytes() for p in before} == before
    assert (project.root / "costs.json").is_file() and (project.root / "test_a.py").is_file()


def test_a_gate_that_stopped_part_way_keeps_the_rest(project: Project) -> None:
    project.pytester.makepyfile(
        test_a="""
        def test_named(modelprof):
            modelprof("fake:tiny", name="a")
            modelprof("fake:tiny", name="b")
            modelprof("fake:tiny", name="c")
        """
    )
    project.run("--modelprof-update-baselines").assert_outcomes(passed=1)
    # b's baseline cannot be read (a directory stands where the file belongs): the gate stops
    # at b, so nothing proves c unused.
    blocked = project.root / "baselines" / "test_a" / "test_named@b.json"
    blocked.unlink()
    blocked.mkdir()
    result = project.run("--modelprof-update-baselines", "--modelprof-prune-baselines")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*test_named@b.json: cannot read baseline*"])
    assert "removed" not in result.stdout.str()
    assert (project.root / "baselines" / "test_a" / "test_named@c.json").is_file()


def test_incomplete_runs_say_why_and_delete_nothing(project: Project) -> None:
    project.pytester.makepyfile(test_a=TWO, test_b=ONE)
    project.run("--modelprof-update-baselines").assert_outcomes(passed=3)
    before = project.baselines()
    for args, why in (
        (["-k", "keep"], "*1 test(s) deselected*"),
        (["-m", "not profile"], "*3 test(s) deselected*"),
        (["--deselect", "test_a.py::test_drop"], "*1 test(s) deselected*"),
    ):
        result = project.run("--modelprof-prune-baselines", *args)
        result.stdout.fnmatch_lines(
            ["stale baselines not checked, nothing removed: " + why.lstrip("*")]
        )
        assert project.baselines() == before, args
    # -x stops after the first failure: the tests after it never ran.
    project.pytester.makepyfile(
        test_0="def test_fails():\n    assert False\n",
    )
    stopped = project.run("-x", "--modelprof-prune-baselines")
    stopped.stdout.fnmatch_lines(
        ["stale baselines not checked, nothing removed: 3 test(s) did not run*"]
    )
    (project.root / "test_0.py").write_text("import no_such_module\n")
    broken = project.run("--modelprof-prune-baselines")
    broken.stdout.fnmatch_lines(
        ["stale baselines not checked, nothing removed: 1 collection error(s)*"]
    )
    assert project.baselines() == before


def test_last_failed_rerun_deletes_nothing(project: Project) -> None:
    project.pytester.makepyfile(test_a=TWO, test_b=ONE)
    project.run("--modelprof-update-baselines").assert_outcomes(passed=3)
    before = project.baselines()
    project.pytester.makepyfile(test_0="def test_fails():\n    assert False\n")
    project.run().assert_outcomes(passed=3, failed=1)
    # --lf reruns test_0.py only: pytest reports the other modules as collected with no tests,
    # which must not read as "their tests are gone".
    result = project.run("--lf", "--modelprof-prune-baselines")
    result.stdout.fnmatch_lines(["stale baselines not checked, nothing removed: *--lf*"])
    assert project.baselines() == before


DEVICES = """
import os

import pytest

DEVICES = ["cpu"] + (["gpu"] if os.environ.get("HAVE_GPU") else [])


@pytest.mark.profile(model="fake:tiny")
@pytest.mark.parametrize("device", DEVICES)
def test_dev(device):
    pass


class TestK:
    @pytest.mark.profile(model="fake:tiny")
    @pytest.mark.parametrize("device", DEVICES)
    def test_dev(self, device):
        pass
"""


def test_a_parameter_this_run_did_not_generate_keeps_its_baseline(
    project: Project, monkeypatch: pytest.MonkeyPatch
) -> None:
    project.pytester.makepyfile(test_a=DEVICES)
    monkeypatch.setenv("HAVE_GPU", "1")
    project.run("--modelprof-update-baselines").assert_outcomes(passed=4)
    before = project.baselines()
    assert "test_a/test_dev[gpu].json" in before and "test_a/TestK/test_dev[gpu].json" in before
    monkeypatch.delenv("HAVE_GPU")
    # A machine without the parameter cannot prove its baseline unused: kept, and said so.
    pruned = project.run("--modelprof-prune-baselines")
    pruned.assert_outcomes(passed=2)
    assert sorted(project.baselines()) == sorted(before)
    assert project.baselines() == before
    assert "removed" not in pruned.stdout.str()
    pruned.stdout.fnmatch_lines(
        [
            "kept 2 baseline(s) in */baselines whose test exists but whose parameters were "
            "not generated in this run:",
            "  test_a/TestK/test_dev[gpu].json",
            "  test_a/test_dev[gpu].json",
        ]
    )
    listed = project.run()  # a plain run does not list them: they are not stale
    listed.assert_outcomes(passed=2)
    assert "stale baseline" not in listed.stdout.str() and "kept" not in listed.stdout.str()
    # A test function that is gone takes every parametrisation's baseline with it.
    project.pytester.makepyfile(test_a="def test_other():\n    pass\n")
    gone = project.run("--modelprof-prune-baselines")
    gone.stdout.fnmatch_lines(["removed 4 stale baseline(s) from */baselines:"])
    assert project.baselines() == {}
