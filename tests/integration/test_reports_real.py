"""The real engine end to end: a small CNN grows, and one pytest run writes every report.

A subprocess run (pytester's inline runs cannot re-import torch's lazily loaded modules); the
baseline is written in this process from the original model, so one run is enough.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from report_testing import browser

pytestmark = pytest.mark.slow

NET = """
import torch.nn as nn


def make_net(width):
    return nn.Sequential(
        nn.Conv2d(3, width, 3, padding=1), nn.BatchNorm2d(width), nn.ReLU(),
        nn.Conv2d(width, width, 3, padding=1), nn.ReLU(),
        nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(width, 10),
    )
"""

PROJECT = NET + """
import pathlib

import pytest

WIDTH = int(pathlib.Path(__file__).with_name("width.txt").read_text())


@pytest.mark.profile(max_flops_delta=0.05)
def test_cnn(modelprof):
    modelprof(make_net(WIDTH), input_shape=(1, 3, 16, 16))
"""


def test_real_model_report(pytester: pytest.Pytester, tmp_path: Path,
                           monkeypatch: pytest.MonkeyPatch) -> None:
    from pytest_modelprof.baseline.document import BaselineDocument
    from pytest_modelprof.baseline.store import baseline_relpath
    from pytest_modelprof.gate.limits import Limits
    from pytest_modelprof.profile import profile_model

    pytester.makepyfile(test_models=PROJECT)
    (pytester.path / "width.txt").write_text("8")
    namespace: dict[str, object] = {}
    exec(NET, namespace)  # make_net, as the project defines it
    make_net = namespace["make_net"]
    assert callable(make_net)
    old = profile_model(make_net(8), input_shape=(1, 3, 16, 16))
    nodeid = "test_models.py::test_cnn"
    doc = BaselineDocument.from_profile(
        old, test=nodeid, name=None,
        settings=Limits().with_values({"max_flops_delta": 0.05}, "test").describe(),
    )
    path = pytester.path / "baselines" / baseline_relpath(nodeid)
    path.parent.mkdir(parents=True)
    path.write_text(doc.to_json())
    (pytester.path / "width.txt").write_text("12")  # the CNN widens: FLOPs about 2.2x

    summary = pytester.path / "summary.md"
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    result = pytester.runpytest_subprocess(
        "--modelprof-report=report.html", "--modelprof-json=results.json",
        "--modelprof-markdown=report.md",
    )
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([
        "::error file=test_models.py,line=*,title=modelprof regression::"
        "test_models.py::test_cnn: FLOPs: * \u2192 * (+*%25, limit +5.0 %25)*"
    ])
    results = json.loads((pytester.path / "results.json").read_text())
    (test,) = results["tests"]
    assert test["status"] == "regressed" and test["profile"]["op_breakdown"]
    page = (pytester.path / "report.html").read_text()
    assert page.count("<svg") == 3 and "Conv2d" in page
    assert "Op families: baseline vs current" in page  # the baseline recorded its op families
    assert "regressed" in summary.read_text()

    chromium = browser()
    dom, console = chromium.load(pytester.path / "report.html", tmp_path)
    assert console == [] and 'data-ready="true"' in dom
    chromium.screenshot(pytester.path / "report.html", tmp_path / "real.png")
