"""``--modelprof-fail-on-improvement`` / ini ``modelprof_fail_on_improvement`` / the marker's
``fail_on_improvement``: improvements beyond tolerance fail."""

from __future__ import annotations

from modelprof_testing import Project

TEST = """
import pytest

@pytest.mark.profile(
    model="fake:tiny", max_flops_delta=0.1, max_macs_delta=0.1, max_intensity_delta="ignore"
)
def test_x():
    pass
"""


def _improve(project: Project) -> None:
    project.pytester.makepyfile(test_a=TEST)
    project.run("--modelprof-update-baselines").assert_outcomes(passed=1)
    project.set_costs(tiny={"flops": 800_000})  # -20 %, beyond the 10 % tolerance


def test_improvement_passes_with_hint_by_default(project: Project) -> None:
    _improve(project)
    result = project.run()
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        [
            "improved  test_a.py::test_x*800 KFLOPs (-20.0 %)*",
            "1 test(s) improved; run: pytest --modelprof-update-baselines test_a.py::test_x",
        ]
    )


def test_strict_cli(project: Project) -> None:
    _improve(project)
    result = project.run("--modelprof-fail-on-improvement")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*improved beyond tolerance against baselines/test_a/test_x.json "
            "(fail_on_improvement keeps baselines tight):",
            "*FLOPs: 1 MFLOPs \u2192 800 KFLOPs (-20.0 %, tolerance +10.0 %)*",
        ]
    )


def test_strict_ini(project: Project) -> None:
    _improve(project)
    project.pytester.makeini("[pytest]\nmodelprof_fail_on_improvement = true\n")
    project.run().assert_outcomes(failed=1)


def test_small_improvement_within_tolerance_passes_strict(project: Project) -> None:
    project.pytester.makepyfile(test_a=TEST)
    project.run("--modelprof-update-baselines")
    project.set_costs(tiny={"flops": 950_000})
    project.run("--modelprof-fail-on-improvement").assert_outcomes(passed=1)


def test_the_marker_decides_for_its_test(project: Project) -> None:
    _improve(project)
    project.pytester.makepyfile(test_a=TEST.replace("model=", "fail_on_improvement=True, model="))
    project.run().assert_outcomes(failed=1)
    project.pytester.makepyfile(test_a=TEST.replace("model=", "fail_on_improvement=False, model="))
    project.run("--modelprof-fail-on-improvement").assert_outcomes(passed=1)
