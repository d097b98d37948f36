"""Seen before, "what changed is not named": the op whose calls changed, its layer and the line of
model code that called it, in the check rows and every report (real captures on meta)."""

from __future__ import annotations

import inspect

import torch
from torch import nn

from pytest_modelprof import profile_model
from pytest_modelprof.gate.documents import compare_profiles
from pytest_modelprof.gate.limits import Limits
from pytest_modelprof.report.html import render_html
from pytest_modelprof.report.markdown import render_markdown
from pytest_modelprof.report.view import build_view
from pytest_modelprof.results.document import RunResults


class SmallCNN(nn.Module):
    def __init__(self, extra: bool) -> None:
        super().__init__()
        self.extra = extra
        self.conv1 = nn.Conv2d(3, 8, 3, padding=1)
        self.conv2 = nn.Conv2d(8, 8, 3, padding=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = torch.relu(self.conv1(x))
        x = self.conv2(x)
        if self.extra:
            x = torch.relu(x)  # the added op
        return x.mean()


def _line(marker: str) -> int:
    lines, start = inspect.getsourcelines(SmallCNN.forward)
    return start + next(i for i, text in enumerate(lines) if marker in text)


def _compared() -> RunResults:
    before = profile_model(SmallCNN(extra=False), input_shape=(8, 3, 32, 32), mode="meta")
    after = profile_model(SmallCNN(extra=True), input_shape=(8, 3, 32, 32), mode="meta")
    result = compare_profiles(before, after, Limits(), nodeid="t.py::test_cnn")
    return RunResults(tests=[result])


def test_the_added_op_is_named_with_its_layer_and_line() -> None:
    results = _compared()
    (result,) = results.tests
    assert result.status == "regressed"
    explained = [c for c in result.checks if c.detail.get("op_changes")]
    assert len(explained) == 1 and explained[0].failed  # said once, on a failed row
    (change,) = explained[0].detail["op_changes"]
    assert change["op"] == "aten::relu" and (change["baseline"], change["current"]) == (1, 2)
    assert change["module"] == "(model)" and change["type"] == "SmallCNN"
    added = f"{__name__.rpartition('.')[2]}.py:{_line('the added op')}"
    assert any(site.endswith(added) for site in change["sites"]), change["sites"]


def test_reports_name_the_op_and_its_line() -> None:
    results = _compared()
    added = f"test_op_changes.py:{_line('the added op')}"
    view = build_view(results)
    titles = [title for title, _ in view.sections[0].details]
    assert titles == ["Ops whose calls changed (baseline \u2192 current)"]
    markdown = render_markdown(view)
    html = render_html(view)
    for page in (markdown, html):
        assert "aten::relu \u00d71 \u2192 \u00d72 in (model) (SmallCNN) at " in page
        assert added in page


def test_the_op_family_chart_shows_baseline_and_current() -> None:
    view = build_view(_compared())
    chart = next(c for c in view.sections[0].charts if c.title.startswith("Op"))
    assert chart.title == "Op families: baseline vs current"
    base = [r for r in chart.rects if r.css == "bar-base"]
    now = [r for r in chart.rects if r.css != "bar-base"]
    assert base and len(base) == len(now)  # every family: a baseline bar beside each current one
    # The family of the added relu changed and comes first: one more call, twice the FLOPs.
    texts = [t.text for t in chart.texts]
    assert texts[1:4] == ["\u00d71 \u2192 \u00d72 calls", "131 KFLOPs (+100.0 %)", texts[3]]
    assert texts[3].endswith("(+100.0 %)")
    assert chart.caption.startswith("1 of 3 op families changed")


def test_a_long_op_line_of_the_failure_message_fits_100_columns() -> None:
    from pytest_modelprof.baseline.check import Check
    from pytest_modelprof.gate.evaluate import failure_text

    change = {
        "op": "aten::convolution",
        "module": "features.denseblock4.denselayer16.conv2",
        "type": "Conv2d",
        "baseline": 1,
        "current": 2,
        "sites": ["torchvision/models/densenet.py:123", "torchvision/models/densenet.py:130"],
    }
    row = Check(
        metric="flops",
        label="FLOPs",
        kind="delta",
        verdict="regressed",
        reason="1 \u2192 2",
        detail={"op_changes": [change], "op_changes_more": 0},
    )
    text = failure_text("head", [row])
    assert max(len(line) for line in text.splitlines()) <= 100, text
    assert (
        "    aten::convolution \u00d71 \u2192 \u00d72 in features.denseblock4.denselayer16.conv2 "
        "(Conv2d)\n      at torchvision/models/densenet.py:123, torchvision/models/densenet.py:130"
    ) in text
