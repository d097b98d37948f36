"""The ``modelprof`` fixture: profiles, registers, returns; names tell several calls apart."""

from __future__ import annotations

from modelprof_testing import Project


def test_fixture_returns_profile_and_gates(project: Project) -> None:
    project.set_costs(a={"flops": 1000}, b={"flops": 2000})
    project.pytester.makepyfile(
        test_a="""
        def test_two(modelprof):
            a = modelprof("fake:a", input_shape=(1, 4), name="a")
            b = modelprof("fake:b", name="b")
            assert a.total_flops == 1000 and b.total_flops >= 2000
        """
    )
    project.run("--modelprof-update-baselines").assert_outcomes(passed=1)
    assert list(project.baselines()) == ["test_a/test_two@a.json", "test_a/test_two@b.json"]
    project.set_costs(a={"flops": 1000}, b={"flops": 3000})
    result = project.run()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        ["*modelprof: b in test_a.py::test_two (name='b') regressed against*"]
    )
    assert "name='a'" not in result.stdout.str().split("short test summary")[0]


def test_duplicate_name_is_an_error(project: Project) -> None:
    project.pytester.makepyfile(
        test_a="""
        def test_dup(modelprof):
            modelprof("fake:tiny")
            modelprof("fake:tiny")
        """
    )
    result = project.run()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        ["*SettingsError: this test already profiled a model without name=*"]
    )


def test_marker_limits_and_defaults_apply_to_fixture_calls(project: Project) -> None:
    project.pytester.makepyfile(
        test_a="""
        import pytest

        @pytest.mark.profile(input_shape=(1, 3, 4, 4), max_flops_delta=0.5, max_macs_delta=0.5)
        def test_limits(modelprof):
            modelprof("fake:tiny")
        """
    )
    project.run("--modelprof-update-baselines").assert_outcomes(passed=1)
    assert project.calls() == ["tiny (1, 3, 4, 4)"]
    project.set_costs(tiny={"flops": 1_400_000})  # +40 % within the marker's 50 %
    result = project.run()
    result.assert_outcomes(passed=1)
    # AI rose by 40 %, but it is derived and not judged unless max_intensity_delta is set: plain ok.
    result.stdout.fnmatch_lines(["ok  *test_a.py::test_limits  1.4 MFLOPs (+40.0 %)*"])
    # A drop beyond the exact default is an improvement: it passes, with a hint.
    project.set_costs(tiny={"flops": 400_000})  # -60 %, beyond the 50 % tolerance
    improved = project.run()
    improved.assert_outcomes(passed=1)
    improved.stdout.fnmatch_lines(
        [
            "improved  test_a.py::test_limits*",
            "1 test(s) improved; run: pytest --modelprof-update-*",
        ]
    )


def test_fixture_works_without_marker(project: Project) -> None:
    project.pytester.makepyfile(
        test_a="""
        def test_plain(modelprof):
            modelprof("fake:tiny")
        """
    )
    project.run().assert_outcomes(failed=1)  # missing baseline
    project.run("--modelprof-update-baselines").assert_outcomes(passed=1)
    project.run().assert_outcomes(passed=1)


def test_profiles_are_reused_within_a_session(project: Project) -> None:
    project.pytester.makepyfile(
        test_a="""
        import pytest

        @pytest.mark.profile(model="fake:tiny", input_shape=(1, 8))
        def test_one():
            pass

        def test_two(modelprof):
            modelprof("fake:tiny", input_shape=(1, 8))
            modelprof("fake:tiny", input_shape=(2, 8), name="bigger")
        """
    )
    project.run("--modelprof-update-baselines").assert_outcomes(passed=2)
    assert project.calls() == ["tiny (1, 8)", "tiny (2, 8)"]  # (1, 8) profiled once


def test_fixture_requested_but_never_called_gates_nothing(project: Project) -> None:
    project.pytester.makepyfile(
        test_a="""
        import os

        def test_maybe(modelprof):
            if os.environ.get("PROFILE_IT"):
                modelprof("fake:tiny")
        """
    )
    result = project.run("--modelprof-update-baselines")
    result.assert_outcomes(passed=1)  # no marker asked for a profile, so there is nothing to judge
    assert "no model=" not in result.stdout.str()
    assert not (project.root / "baselines").exists()  # no baseline written
