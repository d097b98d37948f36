"""A metric added at the one declaration point reaches every renderer without touching them."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from pytest_modelprof.baseline.metrics import Metric, active_metrics, extended_metrics
from pytest_modelprof.baseline.tolerance import Exact
from pytest_modelprof.gate.evaluate import evaluate
from pytest_modelprof.gate.limits import Limits
from pytest_modelprof.gate.settings import SessionSettings
from pytest_modelprof.report.html import render_html
from pytest_modelprof.report.markdown import render_markdown
from pytest_modelprof.report.summary import summary_lines
from pytest_modelprof.report.view import build_view
from pytest_modelprof.results.document import RunInfo, results_from_records
from pytest_modelprof.schema import LayerStats, ModelProfile

MakeProfile = Callable[..., ModelProfile]
MakeLayer = Callable[..., LayerStats]

TOY = Metric(
    name="toy_layers",
    label="toy layer count",
    getter=lambda p: len(p.layers),
    direction="lower",
    delta_key="max_toy_layers_delta",
    default_delta=Exact(),
    formatter=lambda v: f"{v:g} toy-layers",
)


def test_a_toy_metric_shows_in_every_report(
    tmp_path: Path, make_profile: MakeProfile, make_layer: MakeLayer
) -> None:
    settings = SessionSettings(baseline_dir=tmp_path / "b", update=True)
    two = make_profile(layers=[make_layer("a", 10), make_layer("b", 10)])
    three = make_profile(layers=[make_layer("a", 10), make_layer("b", 10), make_layer("c", 0)])
    with extended_metrics(TOY):
        evaluate(two, nodeid="t.py::t", name=None, limits=Limits(), session=settings,
                 rootdir=tmp_path)
        check = SessionSettings(baseline_dir=tmp_path / "b")
        out = evaluate(three, nodeid="t.py::t", name=None, limits=Limits(), session=check,
                       rootdir=tmp_path)
    # Outside the block the table is as before: the metric was only borrowed.
    assert active_metrics().by_name("toy_layers") is None
    record = out.record
    assert record.failed and record.status == "regressed"
    assert any("toy layer count: 2 toy-layers \u2192 3 toy-layers" in f for f in record.failures)
    assert out.failure is not None and "toy layer count" in out.failure

    summary = "\n".join(summary_lines([record]))
    assert "toy layer count" in summary and "3 toy-layers" in summary

    results = results_from_records([record], {}, RunInfo())
    data = json.loads(results.to_json())
    (row,) = [c for c in data["tests"][0]["checks"] if c["metric"] == "toy_layers"]
    assert row["verdict"] == "regressed" and row["current_text"] == "3 toy-layers"

    view = build_view(results)
    html = render_html(view)
    markdown = render_markdown(view)
    for text in (html, markdown):
        assert "toy layer count" in text and "3 toy-layers" in text


def test_a_metric_name_or_limit_cannot_be_registered_twice() -> None:
    import pytest

    with pytest.raises(ValueError, match="already registered"):
        with extended_metrics(TOY, TOY):
            pass
    assert active_metrics().by_name("toy_layers") is None
