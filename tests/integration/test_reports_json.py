"""--modelprof-json: every profile, comparison and verdict, valid against the committed schema."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from modelprof_testing import Project
from report_testing import EVIL_ID, regressing_project

from pytest_modelprof.results.document import SCHEMA_PATH, RunResults

REPO = Path(__file__).resolve().parents[2]


def _check(results_path: Path) -> RunResults:
    results = RunResults.from_json(results_path.read_text(), source=str(results_path))
    assert [t.status for t in results.ordered()] == ["regressed", "ok"]
    tiny = results.ordered()[0]
    assert tiny.failed and tiny.location is not None and tiny.location.line == 3
    assert tiny.profile is not None and tiny.profile.total_flops == 1_300_000
    assert tiny.baseline is not None and tiny.baseline.metrics["flops"] == 1_000_000
    flops = next(c for c in tiny.checks if c.metric == "flops")
    assert (flops.verdict, flops.limit) == ("regressed", "+10.0 %")
    assert results.ordered()[1].nodeid == f"test_models.py::test_other[{EVIL_ID}]"
    assert results.run.torch_version == "0.0-fake" and results.run.exit_status == 1
    return results


def test_json_results(project: Project) -> None:
    regressing_project(project)
    result = project.run("--modelprof-json=results.json")
    result.assert_outcomes(passed=1, failed=1)
    _check(project.root / "results.json")
    jsonschema = pytest.importorskip("jsonschema")
    jsonschema.validate(json.loads((project.root / "results.json").read_text()),
                        json.loads((REPO / SCHEMA_PATH).read_text()))


def test_json_results_under_xdist(project: Project) -> None:
    pytest.importorskip("xdist")
    regressing_project(project)
    project.run("-n", "2", "--modelprof-json=results.json").assert_outcomes(passed=1, failed=1)
    _check(project.root / "results.json")


def test_json_path_must_be_json(project: Project) -> None:
    result = project.run("--modelprof-json=results.txt")
    result.stderr.fnmatch_lines(["*'results.txt' should end in .json*"])
