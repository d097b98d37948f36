"""Seen before, "reports read rows": the judge puts every changed layer on the FLOPs row
(``detail["layer_changes"]``); the HTML layer table and the per-layer FLOPs chart format that
detail and never diff the profile against the baseline themselves."""

from __future__ import annotations

import json
from dataclasses import replace

from report_samples import AFTER, BEFORE, NASTY_MODULE, baseline_of, profile

from pytest_modelprof.baseline.check import Check
from pytest_modelprof.gate.documents import compare_documents, compare_profiles
from pytest_modelprof.gate.limits import Limits
from pytest_modelprof.report.html import render_html
from pytest_modelprof.report.markdown import render_markdown
from pytest_modelprof.report.view import build_view
from pytest_modelprof.results.document import RESULTS_SCHEMA_VERSION, RunResults, load_document


def _flops_row(checks: list[Check]) -> Check:
    return next(c for c in checks if c.metric == "flops")


def _table(results: RunResults, index: int = 0) -> list[tuple[str, str]]:
    """(layer, change) of one section's layer table."""
    rows = build_view(results).sections[index].layers.rows
    return [(r.cells[0].sort, r.cells[2].text) for r in rows]


def test_the_judge_puts_every_changed_layer_on_the_flops_row(results: RunResults) -> None:
    regressed = results.tests[2]
    detail = _flops_row(regressed.checks).detail
    # head: 200 K -> 500 K FLOPs (macs and params follow the samples' flops // 2, // 100);
    # the new layer counts from nothing; body is the same on both sides and left out.
    assert detail["layer_changes"] == [
        {
            "name": "head",
            "type": "Conv2d",
            "change": "grew",
            "before": {"flops": 200_000, "macs": 100_000, "params": 2_000, "traffic": 100_000},
            "after": {"flops": 500_000, "macs": 250_000, "params": 5_000, "traffic": 100_000},
        },
        {
            "name": NASTY_MODULE,
            "type": "Linear",
            "change": "added",
            "before": None,
            "after": {"flops": 100_000, "macs": 50_000, "params": 1_000, "traffic": 50_000},
        },
    ]
    assert detail["baseline_layers"] == 2
    # The same row in the results file, read back.
    again = RunResults.from_json(results.to_json())
    assert _flops_row(again.tests[2].checks).detail == detail
    # No baseline: nothing to diff, no entry.
    assert "layer_changes" not in _flops_row(results.tests[1].checks).detail


def test_the_layer_table_formats_the_row_and_nothing_else(results: RunResults) -> None:
    regressed = results.tests[2]
    assert _table(results) == [("head", "grew"), (NASTY_MODULE, "added")]
    # A row that names only the head: the table shows only the head, whatever the profile and
    # the baseline beside it hold.
    rows = [
        replace(c, detail={**c.detail, "layer_changes": c.detail["layer_changes"][:1]})
        if c.metric == "flops"
        else c
        for c in regressed.checks
    ]
    edited = results.model_copy(update={"tests": [regressed.model_copy(update={"checks": rows})]})
    assert _table(edited) == [("head", "grew")]
    chart = build_view(edited).sections[0].charts[0]
    assert [t.text for t in chart.texts if t.css == "label"] == ["head"]


def test_two_baseline_files_compared_show_the_layers_that_changed() -> None:
    # `modelprof compare OLD.json NEW.json` on baseline files: no profile on the record, yet the
    # new file's layers are known; before, every baseline layer showed as "removed".
    diff = compare_documents(baseline_of(BEFORE), baseline_of(AFTER), Limits())
    assert _table(diff) == [("head", "grew"), (NASTY_MODULE, "added")]
    note = build_view(diff).sections[0].layers.note
    assert note.startswith("2 of 2 baseline layers changed")


def test_a_results_file_of_schema_version_3_renders_the_same(results: RunResults) -> None:
    # A v3 file's rows carry no layer_changes: the migration adds them from the profile and
    # baseline the file holds, so its report is the one a v4 file of the same run gives.
    assert RESULTS_SCHEMA_VERSION == 5
    data = json.loads(results.to_json())
    for test in data["tests"]:
        for check in test["checks"]:
            check["detail"].pop("layer_changes", None)
            check["detail"].pop("baseline_layers", None)
    old = RunResults.from_json(json.dumps({**data, "schema_version": 3}))
    assert old.schema_version == 5
    assert old.to_json() == results.to_json()
    assert render_html(build_view(old)) == render_html(build_view(results))


def test_the_results_schema_version_4_loads_from_a_file(results: RunResults, tmp_path) -> None:
    path = tmp_path / "results.json"
    path.write_text(results.to_json())
    loaded = load_document(path)
    assert isinstance(loaded, RunResults) and loaded.to_json() == results.to_json()


def test_markdown_lists_grown_layers_for_a_failure_only() -> None:
    # A change within its limits: the HTML table shows the layer, the Markdown (the PR comment)
    # lists no "layers that grew most": that list explains a failed row, and no row failed.
    grown = profile(
        "net", [BEFORE.layers[0], BEFORE.layers[1].model_copy(update={"flops": 220_000})]
    )
    limits = Limits().with_values(
        {"max_flops_delta": "10%", "max_macs_delta": "ignore", "max_params_delta": "ignore"}, "test"
    )
    ok = compare_profiles(BEFORE, grown, limits, nodeid="t::ok")
    assert ok.status == "ok"
    results = RunResults(tests=[ok])
    assert _table(results) == [("head", "grew")]
    assert "grew most" not in render_markdown(build_view(results))
