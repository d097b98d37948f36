"""The view model: every number formatted once, regressions first, layer diffs, charts."""

from __future__ import annotations

from report_samples import EVIL, NASTY_MODULE

from pytest_modelprof.report.view import build_view, headline
from pytest_modelprof.results.document import RunResults


def test_sections_put_regressions_first(results: RunResults) -> None:
    view = build_view(results)
    assert [s.summary.status for s in view.sections] == ["regressed", "new", "ok"]
    assert view.count_line == "3 profiles: 1 regressed, 1 new baseline, 1 ok"
    assert [(c.status, c.count) for c in view.counts] == [("regressed", "1"), ("new", "1"),
                                                          ("ok", "1")]
    assert view.sections[1].summary.label == "tests/test_x.py::test_new@backbone"


def test_metric_rows_and_headline(results: RunResults) -> None:
    section = build_view(results).sections[0]
    flops = section.metrics[0]
    # 1 MFLOPs -> 1.4 MFLOPs: +400 KFLOPs, +40.0 %, over the 10 % limit.
    assert (flops.label, flops.baseline, flops.current, flops.delta, flops.limit,
            flops.verdict) == ("FLOPs", "1 MFLOPs", "1.4 MFLOPs", "+400 KFLOPs (+40.0 %)",
                               "+10.0 %", "regressed")
    assert flops.css == "v-regressed"
    # traffic 180 KB -> 230 KB is +27.8 % (50 / 180) under the built-in exact limit.
    assert section.problems[3] == "traffic: 180 KB \u2192 230 KB (+27.8 %, limit exact)"
    assert section.summary.headline.startswith(
        "FLOPs: 1 MFLOPs \u2192 1.4 MFLOPs (+40.0 %, limit +10.0 %); MACs"
    )
    assert section.location == "tests/test_x.py:12"
    assert headline(results.tests[0]) == "within limits"


def test_layer_diff_lists_changed_and_added_layers(results: RunResults) -> None:
    table = build_view(results).sections[0].layers
    rows = [[c.text for c in r.cells] for r in table.rows]
    # head: 200 K -> 500 K FLOPs (+150 %); the new layer counts from zero; body is unchanged.
    assert rows[0][:7] == ["head", "Conv2d", "grew", "200 KFLOPs", "500 KFLOPs", "+300 KFLOPs",
                           "+150.0 %"]
    assert rows[1][:3] == [NASTY_MODULE, "Linear", "added"]
    assert table.rows[0].cells[5].sort == "300000.0" and table.rows[0].cells[5].css == "up"
    assert table.note.startswith("2 of 2 baseline layers changed")
    assert build_view(results).sections[2].layers.note == "No layer changed (of 2)."


def test_charts_are_laid_out(results: RunResults) -> None:
    layers, ops, roofline = build_view(results).sections[0].charts
    # Two bars (baseline and current) per changed layer.
    assert len(layers.rects) == 4 and {r.css for r in layers.rects} == {"bar-base", "bar-up"}
    assert any(EVIL not in t.text and NASTY_MODULE in t.title for t in layers.texts)
    assert [t.text for t in ops.texts if t.css == "label"] == ["conv", "elementwise"]
    assert roofline.polylines and roofline.circles
    assert any("balance 10 FLOPs/B (generic)" == t.text for t in roofline.texts)
    # Layer AI 800 K / 80 K = 10 sits at the ridge; head 5 FLOPs/B is left of it.
    assert "2 of 3 layers are left of the ridge" in roofline.caption


def test_empty_run() -> None:
    view = build_view(RunResults())
    assert view.sections == () and view.empty.startswith("No profiled test ran")
    assert view.count_line == "0 profiles"
