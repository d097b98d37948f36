"""Every argument of ``@pytest.mark.profile``."""

from __future__ import annotations

from modelprof_testing import Project


def test_marker_is_registered_with_its_signature(project: Project) -> None:
    result = project.run("--markers")
    result.stdout.fnmatch_lines(
        ["@pytest.mark.profile(model=None, input_shape=None, inputs=None, device=None, name=None,*"]
    )


def test_model_input_shape_device_name(project: Project) -> None:
    project.pytester.makepyfile(
        test_a="""
        import pytest

        @pytest.mark.profile("fake:tiny", input_shape=[2, 3, 16, 16], device="meta", name="bb")
        def test_positional():
            pass
        """
    )
    project.run("--modelprof-update-baselines").assert_outcomes(passed=1)
    assert project.calls() == ["tiny (2, 3, 16, 16)"]
    ((path, text),) = project.baselines().items()
    assert path == "test_a/test_positional@bb.json"
    assert b'"device": "meta"' in text and b'"name": "bb"' in text


def test_unknown_argument_is_named(project: Project) -> None:
    project.pytester.makepyfile(
        test_a="""
        import pytest

        @pytest.mark.profile(model="fake:tiny", max_flop_delta=0.1)
        def test_typo():
            pass
        """
    )
    result = project.run()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*marker on test_a.py::test_typo: unknown argument max_flop_delta "
            "for @pytest.mark.profile*"
        ]
    )
    assert project.calls() == []  # refused before the body ran or anything was profiled


def test_bad_limit_value_names_marker(project: Project) -> None:
    project.pytester.makepyfile(
        test_a="""
        import pytest

        @pytest.mark.profile(model="fake:tiny", max_flops="nine gigs")
        def test_bad():
            pass
        """
    )
    result = project.run()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        ["*marker on test_a.py::test_bad: bad value for max_flops='nine gigs'*"]
    )


def test_every_limit_is_accepted(project: Project) -> None:
    project.set_costs(tiny={"flops": 1_000_000, "params": 1000, "memory": 100_000})
    project.pytester.makepyfile(
        test_a="""
        import pytest

        @pytest.mark.profile(
            model="fake:tiny",
            max_flops_delta=0.1, max_macs_delta="10%", max_params_delta=0,
            max_traffic_delta="exact", max_peak_activations_delta=0.5, max_intensity_delta=0.2,
            max_flops="9G", max_params="30M", max_traffic="120MB",
        )
        def test_all():
            pass
        """
    )
    project.run("--modelprof-update-baselines").assert_outcomes(passed=1)
    result = project.run()
    result.assert_outcomes(passed=1)
    (text,) = project.baselines().values()
    assert b'"max_flops": "9e+09"' in text and b'"max_intensity_delta": "-20.0 %"' in text


def test_budget_without_baseline_and_with(project: Project) -> None:
    project.pytester.makepyfile(
        test_a="""
        import pytest

        @pytest.mark.profile(model="fake:tiny", max_flops="500K", max_params="30M")
        def test_budget():
            pass
        """
    )
    missing = project.run()
    missing.assert_outcomes(failed=1)
    missing.stdout.fnmatch_lines(["*no baseline at*", "*over budget max_flops=500 KFLOPs*"])
    update = project.run("--modelprof-update-baselines")
    update.assert_outcomes(failed=1)  # updating cannot fix an absolute budget
    update.stdout.fnmatch_lines(
        ["*that updating the baseline cannot fix (baseline * was written anyway):*"]
    )
    project.run().stdout.fnmatch_lines(["*over budget max_flops=500 KFLOPs*"])


def test_limit_on_unmeasured_metric_fails(project: Project) -> None:
    project.pytester.makepyfile(
        test_a="""
        import pytest

        @pytest.mark.profile(model="fake:tiny", max_subgraphs_delta=0.1)
        def test_subgraphs():
            pass
        """
    )
    # The fake engine's profiles carry no partition, so subgraphs are not measured. (Latency
    # is always measured when a latency limit is set: see test_timing_and_sweep.py.)
    project.run("--modelprof-update-baselines").stdout.fnmatch_lines(
        [
            "*that updating the baseline cannot fix*",
            "*subgraphs: a limit is set (max_subgraphs_delta=+10.0 %) but this profile does not*",
        ]
    )


def test_ai_drop_direction(project: Project) -> None:
    project.set_costs(tiny={"flops": 1_000_000, "ai": 10.0})
    project.pytester.makepyfile(
        test_a="""
        import pytest

        @pytest.mark.profile(model="fake:tiny", max_intensity_delta=0.1)
        def test_ai():
            pass
        """
    )
    project.run("--modelprof-update-baselines")
    project.set_costs(tiny={"flops": 1_000_000, "ai": 12.0})  # higher AI is better
    project.run().assert_outcomes(passed=1)
    # -20 % beyond -10 %: the same FLOPs over more bytes (if FLOPs and bytes both held or
    # fell, a lower ratio would not fail: see test_verdict_explanations.py).
    project.set_costs(tiny={"flops": 1_000_000, "ai": 8.0, "memory": 125_000})
    result = project.run()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*intensity: 10 FLOP/B \u2192 8 FLOP/B (-20.0 %, limit -10.0 %)*"])


def test_marker_without_model_needs_the_fixture(project: Project) -> None:
    project.pytester.makepyfile(
        test_a="""
        import pytest

        @pytest.mark.profile(max_flops_delta=0.1)
        def test_nothing():
            pass
        """
    )
    result = project.run()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*has no model= and the test did not call the modelprof fixture*"])


def test_class_marker_applies_to_methods(project: Project) -> None:
    project.pytester.makepyfile(
        test_a="""
        import pytest

        @pytest.mark.profile(model="fake:tiny")
        class TestZoo:
            def test_one(self):
                pass
        """
    )
    project.run("--modelprof-update-baselines").assert_outcomes(passed=1)
    assert list(project.baselines()) == ["test_a/TestZoo/test_one.json"]
