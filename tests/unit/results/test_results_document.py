"""The JSON results document: round trip, committed schema, errors, merge, comparisons."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from report_samples import AFTER, BEFORE, baseline_of

from pytest_modelprof.baseline.renames import METRIC_RENAMES
from pytest_modelprof.errors import ReportError
from pytest_modelprof.gate.documents import compare_documents
from pytest_modelprof.gate.limits import Limits
from pytest_modelprof.report.markdown import render_markdown
from pytest_modelprof.report.view import build_view
from pytest_modelprof.results.document import (
    RESULTS_SCHEMA_VERSION,
    SCHEMA_PATH,
    RunInfo,
    RunResults,
    load_document,
    results_json_schema,
)
from pytest_modelprof.results.merge import merge_results

REPO = Path(__file__).resolve().parents[3]


def test_round_trip_is_deterministic(results: RunResults) -> None:
    text = results.to_json()
    again = RunResults.from_json(text)
    assert again.to_json() == text  # floats are rounded on write, so compare the documents
    assert text.endswith("}\n") and json.loads(text)["kind"] == "pytest-modelprof-results"


def test_committed_schema_is_current() -> None:
    committed = (REPO / SCHEMA_PATH).read_text()
    assert committed == results_json_schema(), (
        f"{SCHEMA_PATH} is stale; regenerate it: "
        f"python -m pytest_modelprof.results.document {SCHEMA_PATH}"
    )


def test_results_validate_against_the_committed_schema(results: RunResults) -> None:
    jsonschema = pytest.importorskip("jsonschema")
    schema = json.loads((REPO / SCHEMA_PATH).read_text())
    jsonschema.validate(json.loads(results.to_json()), schema)
    bad = json.loads(results.to_json())
    bad["tests"][0]["status"] = "exploded"
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(bad, schema)


def test_errors_name_the_file_and_field(tmp_path: Path, results: RunResults) -> None:
    data = json.loads(results.to_json())
    data["tests"][1]["status"] = "exploded"
    path = tmp_path / "r.json"
    path.write_text(json.dumps(data))
    with pytest.raises(ReportError, match=r"r\.json: not a valid RunResults \(tests\.1\.status"):
        load_document(path)
    path.write_text("{")
    with pytest.raises(ReportError, match="not valid JSON"):
        load_document(path)
    path.write_text('{"hello": 1}')
    with pytest.raises(ReportError, match="not a modelprof document"):
        load_document(path)
    data = json.loads(results.to_json())
    data["schema_version"] = 99
    path.write_text(json.dumps(data))
    with pytest.raises(ReportError, match="newer"):
        load_document(path)


def test_load_document_tells_kinds_apart(tmp_path: Path, results: RunResults) -> None:
    for name, text, kind in (("p.json", BEFORE.to_json(), "ModelProfile"),
                             ("b.json", baseline_of(BEFORE).to_json(), "BaselineDocument"),
                             ("r.json", results.to_json(), "RunResults")):
        (tmp_path / name).write_text(text)
        assert type(load_document(tmp_path / name)).__name__ == kind


def test_compare_two_profiles_and_two_baselines() -> None:
    limits = Limits()
    diff = compare_documents(BEFORE, AFTER, limits)
    assert [t.status for t in diff.tests] == ["regressed"]
    same = compare_documents(baseline_of(BEFORE), baseline_of(BEFORE), limits)
    assert [t.status for t in same.tests] == ["ok"]
    with pytest.raises(ReportError, match="cannot compare a ModelProfile with a BaselineDocument"):
        compare_documents(BEFORE, baseline_of(BEFORE), limits)


def test_compare_two_results_files_matches_tests(results: RunResults) -> None:
    newer = results.model_copy(update={"tests": results.tests[:2]})
    diff = compare_documents(results, newer, Limits())
    by_label = {t.label: t.status for t in diff.tests}
    # test_same and test_new are unchanged; the regressed test vanished from the new run.
    assert by_label == {"tests/test_x.py::test_same": "ok",
                        "tests/test_x.py::test_new@backbone": "ok",
                        results.tests[2].label: "missing"}


def test_merge_joins_shards(results: RunResults) -> None:
    a = results.model_copy(update={"tests": results.tests[:1]})
    b = results.model_copy(update={"tests": results.tests[1:],
                                   "run": results.run.model_copy(update={"device": "cuda"})})
    merged = merge_results([("a.json", a), ("b.json", b)])
    assert [t.label for t in merged.tests] == [t.label for t in results.tests]
    assert merged.run.shards == 2 and merged.run.device == "cpu, cuda"
    with pytest.raises(ReportError, match="is in both a.json and b.json"):
        merge_results([("a.json", a), ("b.json", a)])
    other = b.model_copy(update={"run": RunInfo(commit="ffff")})
    with pytest.raises(ReportError, match="different commits"):
        merge_results([("a.json", a), ("b.json", other)])


def test_a_results_file_of_schema_version_2_still_loads(tmp_path: Path) -> None:
    # Written by pytest-modelprof before the row and record types became one:
    # its rows were pydantic models and its tests lacked metrics / baseline_metrics.
    path = Path(__file__).parents[1] / "report" / "data" / "results-v2.json"
    raw = json.loads(path.read_text())
    assert raw["schema_version"] == 2
    loaded = load_document(path)
    assert isinstance(loaded, RunResults) and loaded.schema_version == RESULTS_SCHEMA_VERSION
    assert [(t.label, t.status) for t in loaded.tests] == [
        (t["nodeid"] + (f"@{t['name']}" if t["name"] else ""), t["status"]) for t in raw["tests"]
    ]
    for test, old in zip(loaded.tests, raw["tests"], strict=True):
        # Every field kept; v4 adds the judge's layer changes to the FLOPs row, from the
        # profile and baseline the file holds (the new test has no baseline: none).
        rows = [c.to_json() for c in test.checks]
        added = [(r["metric"], r["detail"].pop("layer_changes", None) is not None,
                  r["detail"].pop("baseline_layers", None)) for r in rows]
        assert [a for a in added if a[1]] == (
            [("flops", True, 2)] if old["baseline"] is not None else []
        )
        # v5 names each quantity with one word: a renamed metric's row gets its name and label.
        assert rows == [
            {**c, "metric": METRIC_RENAMES.get(c["metric"], c["metric"]),
             "label": r["label"] if c["metric"] in METRIC_RENAMES else c["label"]}
            for c, r in zip(old["checks"], rows, strict=True)
        ]
        assert test.metrics == {} and test.baseline_metrics == {}
    regressed = loaded.tests[2]
    assert regressed.failed and any(c.detail.get("layers") for c in regressed.checks)
    # It renders and writes back as the current version, which reads back the same.
    assert "regressed" in render_markdown(build_view(loaded))
    again = RunResults.from_json(loaded.to_json())
    assert again.schema_version == RESULTS_SCHEMA_VERSION and again.to_json() == loaded.to_json()
