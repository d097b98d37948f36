"""A profile's baseline is read once per check, and a file that holds another test's baseline is
nobody's evidence: the collectors and the judge see the one document the gate read."""

from __future__ import annotations

import json

from modelprof_testing import FAKE_ENGINE, Project

# Counts each open of a baseline file at the OS level (the session's own opens, restored after).
OPENS = """

import os

_real_open = os.open


def _counting_open(path, flags, *args, **kwargs):
    name = os.fspath(path)
    if "baselines" in str(name) and str(name).endswith(".json") and not flags & os.O_WRONLY:
        with (ROOT / "opens.log").open("a") as log:
            log.write(os.path.basename(name) + "\\n")
    return _real_open(path, flags, *args, **kwargs)


def pytest_configure(config):
    os.open = _counting_open


def pytest_unconfigure(config):
    os.open = _real_open
"""

# A measured metric whose collector logs the stored evidence it was given.
WIDGETS = """

from pytest_modelprof.baseline.collector import JsonCollector
from pytest_modelprof.baseline.metrics import Metric
from pytest_modelprof.baseline.tolerance import Exact


def count_widgets(call):
    with (ROOT / "stored.log").open("a") as log:
        log.write(json.dumps(call.stored) + "\\n")
    return {"widgets": int((ROOT / "widgets.txt").read_text())}


def pytest_modelprof_register_collectors(config):
    return [JsonCollector("widgets", measure_with=count_widgets)]


def pytest_modelprof_register_metrics(config):
    return [Metric(name="widgets", label="widgets", direction="lower",
                   delta_key="max_widgets_delta", default_delta=Exact(),
                   formatter=lambda v: f"{v:g} widgets", summary=False, collector="widgets")]
"""


def _opens(project: Project) -> list[str]:
    log = project.root / "opens.log"
    return log.read_text().splitlines() if log.exists() else []


def test_a_check_reads_each_baseline_once(project: Project) -> None:
    project.pytester.makeconftest(FAKE_ENGINE + OPENS)
    project.pytester.makepyfile(
        test_models="""
        import pytest

        @pytest.mark.profile(model="fake:tiny")
        def test_one():
            pass

        @pytest.mark.profile(model="fake:tiny", name="other")
        def test_two():
            pass
        """
    )
    project.run("--modelprof-update-baselines").assert_outcomes(passed=2)
    (project.root / "opens.log").unlink(missing_ok=True)
    project.run().assert_outcomes(passed=2)
    assert sorted(_opens(project)) == ["test_one.json", "test_two@other.json"]


def test_another_tests_file_gives_its_evidence_to_nobody(project: Project) -> None:
    # test_a/TestR.py::test_m and test_a.py::TestR::test_m have one usual path,
    # test_a/TestR/test_m.json. When it holds the other's baseline, a check refuses it, and
    # the collector is not handed the other test's widgets either.
    project.pytester.makeconftest(FAKE_ENGINE + WIDGETS)
    (project.root / "widgets.txt").write_text("3")
    project.pytester.makepyfile(
        **{
            "test_a/TestR": """
            import pytest

            @pytest.mark.profile(model="fake:tiny", max_widgets_delta=0)
            def test_m():
                pass
            """
        }
    )
    project.run("--modelprof-update-baselines", "test_a/TestR.py").assert_outcomes(passed=1)
    theirs = json.loads(project.baselines()["test_a/TestR/test_m.json"])
    assert theirs["measured"] == {"widgets": {"widgets": 3}}
    (project.root / "test_a" / "TestR.py").unlink()
    project.pytester.makepyfile(
        test_a="""
        import pytest

        class TestR:
            @pytest.mark.profile(model="fake:tiny", max_widgets_delta=0)
            def test_m(self):
                pass
        """
    )
    (project.root / "stored.log").unlink()
    result = project.run("test_a.py")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*holds the baseline of test_a/TestR.py::test_m*"])
    assert (project.root / "stored.log").read_text().splitlines() == ["null"]
