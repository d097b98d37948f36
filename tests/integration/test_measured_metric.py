"""A metric with a measurement of its own, declared in one place (a conftest hook), is gated.

The toy counted metric (tests/unit/baseline/test_toy_metric.py) shows that a number the capture
gives needs one ``Metric``; this toy *measured* metric brings its own
:class:`~pytest_modelprof.baseline.collector.Collector`, registered by the conftest under the
key the metric names (it reads ``widgets.txt`` and logs each run), and reaches the baseline,
the verdict and the reports without an edit to the gate.
"""

from __future__ import annotations

import json

from modelprof_testing import FAKE_ENGINE, Project

MEASURED = '''

from pytest_modelprof.baseline.collector import JsonCollector
from pytest_modelprof.baseline.metrics import Metric
from pytest_modelprof.baseline.tolerance import Exact


def count_widgets(call):
    with (ROOT / "widgets.log").open("a") as log:
        log.write(f"{call.request.model} {sorted(call.limited)}\\n")
    return {"widgets": int((ROOT / "widgets.txt").read_text()), "note": "counted"}


WIDGETS = Metric(
    name="widgets",
    label="widget count",
    direction="lower",
    delta_key="max_widgets_delta",
    budget_key="max_widgets",
    default_delta=Exact(),
    formatter=lambda v: f"{v:g} widgets",
    summary=False,
    collector="widgets",
)


def pytest_modelprof_register_collectors(config):
    return [JsonCollector("widgets", measure_with=count_widgets)]


def pytest_modelprof_register_metrics(config):
    return [WIDGETS]
'''

TESTS = """
import pytest

@pytest.mark.profile(model="fake:tiny", max_widgets_delta=0)
def test_limited():
    pass

@pytest.mark.profile(model="fake:tiny", name="plain")
def test_unlimited():
    pass
"""


def _project(project: Project, widgets: int) -> Project:
    project.pytester.makeconftest(FAKE_ENGINE + MEASURED)
    project.pytester.makepyfile(test_models=TESTS)
    (project.root / "widgets.txt").write_text(str(widgets))
    return project


def _log(project: Project) -> list[str]:
    log = project.root / "widgets.log"
    return log.read_text().splitlines() if log.exists() else []


def test_a_measured_metric_is_measured_stored_and_gated(project: Project) -> None:
    _project(project, 3)
    project.run("--modelprof-update-baselines").assert_outcomes(passed=2)
    # Measured only for the test that limits it, and told which of its metrics are limited.
    assert _log(project) == ["fake:tiny ['widgets']"]
    stored = json.loads(project.baselines()["test_models/test_limited.json"])
    assert stored["metrics"]["widgets"] == 3
    assert stored["measured"] == {"widgets": {"widgets": 3, "note": "counted"}}
    plain = json.loads(project.baselines()["test_models/test_unlimited@plain.json"])
    assert "widgets" not in plain["metrics"] and "measured" not in plain

    project.run().assert_outcomes(passed=2)

    (project.root / "widgets.txt").write_text("5")
    result = project.run("--modelprof-json=results.json", "--modelprof-markdown=report.md")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*widget count: 3 widgets \u2192 5 widgets*"])

    data = json.loads((project.root / "results.json").read_text())
    (test,) = [t for t in data["tests"] if t["nodeid"].endswith("test_limited")]
    (row,) = [c for c in test["checks"] if c["metric"] == "widgets"]
    assert (row["verdict"], row["current_text"], row["baseline_text"]) == (
        "regressed", "5 widgets", "3 widgets"
    )
    markdown = (project.root / "report.md").read_text()
    assert "widget count" in markdown and "5 widgets" in markdown


def test_a_budget_on_a_measured_metric_holds_without_a_baseline(project: Project) -> None:
    _project(project, 7)
    project.pytester.makepyfile(
        test_models="""
        import pytest

        @pytest.mark.profile(model="fake:tiny", max_widgets=5)
        def test_budget():
            pass
        """
    )
    result = project.run("--modelprof-update-baselines")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*widget count*7 widgets*"])


def test_a_metric_hook_that_returns_no_metric_is_named(project: Project) -> None:
    project.pytester.makeconftest(
        FAKE_ENGINE + "\n\ndef pytest_modelprof_register_metrics(config):\n    return ['x']\n"
    )
    result = project.run()
    assert result.ret != 0
    result.stderr.fnmatch_lines(["*pytest_modelprof_register_metrics returned 'x'*Metric*"])


def test_a_metric_whose_collector_nobody_registered_is_named(project: Project) -> None:
    # The key is checked at start-up: no test runs with a metric that nothing can measure.
    project.pytester.makeconftest(
        FAKE_ENGINE + MEASURED.replace("def pytest_modelprof_register_collectors", "def _unused")
    )
    project.pytester.makepyfile(test_models=TESTS)
    result = project.run()
    assert result.ret != 0
    result.stderr.fnmatch_lines(
        ["*metric 'widgets' names the collector 'widgets'*pytest_modelprof_register_collectors*"]
    )


def test_a_measured_metric_under_xdist(project: Project) -> None:
    import pytest

    pytest.importorskip("xdist")
    _project(project, 3)
    project.run("--modelprof-update-baselines").assert_outcomes(passed=2)
    (project.root / "widgets.txt").write_text("4")
    # Each worker builds its session's metric set from the same hook.
    result = project.run("-n", "2", "--modelprof-json=results.json")
    result.assert_outcomes(passed=1, failed=1)
    data = json.loads((project.root / "results.json").read_text())
    rows = [c for t in data["tests"] for c in t["checks"] if c["metric"] == "widgets"]
    assert [(r["verdict"], r["current_text"]) for r in rows] == [("regressed", "4 widgets")]
