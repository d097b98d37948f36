"""An error row (a gated test that failed before it was judged) in the view and every renderer."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_modelprof.report.github import annotation_lines
from pytest_modelprof.report.html import render_html
from pytest_modelprof.report.markdown import render_markdown, render_step_summary
from pytest_modelprof.report.view import build_view
from pytest_modelprof.results.document import SCHEMA_PATH, RunInfo, RunResults, results_from_records
from pytest_modelprof.results.record import error_record, model_label

REPO = Path(__file__).resolve().parents[3]
MESSAGE = "modelprof: Broken: the model's forward raised ValueError: boom\n  at nets.py:11"


def _results() -> RunResults:
    record = error_record(
        "t.py::test_broken",
        MESSAGE,
        name="backbone",
        model=object(),
        baseline_path="t/test_broken@backbone.json",
    )
    return results_from_records([record], {}, RunInfo())


def test_model_label_names_what_was_given() -> None:
    assert model_label("hf:bert") == "hf:bert"

    class Net:  # a module (or any object) is named by its class, as the engine names it
        pass

    assert model_label(Net()) == "Net"
    assert model_label(None) == "\u2013"


def test_an_error_row_round_trips_through_the_committed_schema() -> None:
    results = _results()
    again = RunResults.from_json(results.to_json())
    (test,) = again.tests
    assert (test.status, test.failed, test.failures, test.label) == (
        "error",
        True,
        [MESSAGE],
        "t.py::test_broken@backbone",
    )
    jsonschema = pytest.importorskip("jsonschema")
    jsonschema.validate(json.loads(results.to_json()), json.loads((REPO / SCHEMA_PATH).read_text()))


def test_the_view_leads_with_the_message_and_draws_nothing() -> None:
    view = build_view(_results())
    assert view.count_line == "1 profile: 1 error"
    (section,) = view.sections
    assert section.summary.headline == MESSAGE and section.problems == (MESSAGE,)
    assert (section.summary.status_label, section.summary.glyph) == ("error", "\u274c")
    assert section.charts == () and section.metrics == ()


def test_every_renderer_shows_the_message() -> None:
    results = _results()
    view = build_view(results)
    flat = " ".join(MESSAGE.split())
    for text in (render_markdown(view), render_step_summary(view)):
        assert flat in " ".join(text.split())
        assert "| check |" not in text  # no empty table of checks
    page = render_html(view)
    assert "the model&#39;s forward raised ValueError: boom" in page
    assert "<h3>Checks</h3>" not in page and "Layers that changed" not in page
    (line,) = annotation_lines(results, rootdir=REPO)
    assert "title=modelprof error::" in line and "ValueError: boom%0A  at nets.py:11" in line
