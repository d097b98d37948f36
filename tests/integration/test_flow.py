"""The whole story: missing -> update -> pass -> regress -> fail clearly -> update."""

from __future__ import annotations

from modelprof_testing import Project


def test_missing_update_pass_regress_update(project: Project) -> None:
    project.pytester.makepyfile(
        test_models="""
        import pytest

        @pytest.mark.profile(model="fake:tiny", input_shape=(1, 3, 8, 8), max_flops_delta=0.1)
        def test_tiny():
            pass
        """
    )
    missing = project.run()
    missing.assert_outcomes(failed=1)  # a missing baseline fails, never skips
    missing.stdout.fnmatch_lines(
        [
            "*modelprof: tiny in test_models.py::test_tiny: no baseline at "
            "baselines/test_models/test_tiny.json.",
            "*Write it with: pytest --modelprof-update-baselines test_models.py::test_tiny",
            "*= modelprof =*",
            "missing  test_models.py::test_tiny*",
        ]
    )
    assert project.baselines() == {}  # a normal run never writes

    update = project.run("--modelprof-update-baselines")
    update.assert_outcomes(passed=1)
    update.stdout.fnmatch_lines(["new  *test_models.py::test_tiny*"])
    written = project.baselines()
    assert list(written) == ["test_models/test_tiny.json"]

    project.run().assert_outcomes(passed=1)

    project.set_costs(tiny={"flops": 1_300_000, "layers": {"body": 1_000_000, "head": 300_000}})
    regress = project.run()
    regress.assert_outcomes(failed=1)
    regress.stdout.fnmatch_lines(
        [
            "*modelprof: tiny in test_models.py::test_tiny regressed against "
            "baselines/test_models/test_tiny.json (*problems):",
            "*FLOPs: 1 MFLOPs \u2192 1.3 MFLOPs (+30.0 %, limit +10.0 %)",
            "*layers that grew most (FLOPs):",
            "*head (Conv2d): 0 FLOPs \u2192 300 KFLOPs (+300 KFLOPs)",
            "*If the change is intended, run: pytest --modelprof-update-baselines "
            "test_models.py::test_tiny",
        ]
    )
    assert "Traceback" not in regress.stdout.str()  # one clean message, no plugin traceback
    regress.stdout.fnmatch_lines(["regressed  test_models.py::test_tiny*1.3 MFLOPs (+30.0 %)*"])
    assert project.baselines() == written

    updated = project.run("--modelprof-update-baselines")
    updated.assert_outcomes(passed=1)
    updated.stdout.fnmatch_lines(["updated  test_models.py::test_tiny*"])
    assert project.baselines() != written
    project.run().assert_outcomes(passed=1)


def test_update_is_byte_identical_when_nothing_changed(project: Project) -> None:
    project.pytester.makepyfile(
        test_a="""
        import pytest

        @pytest.mark.parametrize("n", [1, 2])
        @pytest.mark.profile(model="fake:tiny")
        def test_p(n):
            pass
        """
    )
    project.run("--modelprof-update-baselines").assert_outcomes(passed=2)
    first = project.baselines()
    assert sorted(first) == ["test_a/test_p[1].json", "test_a/test_p[2].json"]
    mtimes = {p: (project.root / "baselines" / p).stat().st_mtime_ns for p in first}
    again = project.run("--modelprof-update-baselines")
    again.stdout.fnmatch_lines(["ok  *test_a.py::test_p[[]1]*"])
    assert project.baselines() == first
    assert mtimes == {p: (project.root / "baselines" / p).stat().st_mtime_ns for p in first}
    for text in first.values():
        assert text.endswith(b"}\n")


def test_failing_test_body_skips_the_gate(project: Project) -> None:
    project.pytester.makepyfile(
        test_a="""
        import pytest

        @pytest.mark.profile(model="fake:tiny")
        def test_boom():
            assert 1 == 2
        """
    )
    result = project.run("--modelprof-update-baselines")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*assert 1 == 2*"])
    assert project.baselines() == {}
