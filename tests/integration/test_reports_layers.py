"""Seen before, "reports recompute the layers that changed": when only memory regressed, the
failure text names the layers whose memory grew, and every report (JSON, Markdown, HTML) names
the same layers, read from the row's ``detail["layers"]``; the HTML layer table reads every
changed layer from the FLOPs row's ``detail["layer_changes"]``. Subprocess runs (see the NB in
test_real_engine.py)."""

from __future__ import annotations

import html
import json
import re

import pytest

pytestmark = pytest.mark.slow

# ``act`` costs more FLOPs and moves the same bytes (sigmoid for relu); ``copy`` moves more
# bytes at zero FLOPs (one more clone). FLOPs stay within their 50 % limit, memory regresses.
PROJECT = """
import pathlib

import pytest
import torch
import torch.nn as nn

CHANGED = pathlib.Path(__file__).with_name("changed.txt").read_text().strip() == "1"


class Act(nn.Module):
    def forward(self, x):
        return torch.sigmoid(x) if CHANGED else torch.relu(x)


class Copy(nn.Module):
    def forward(self, x):
        y = x.clone()
        return y.clone() if CHANGED else y


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(64, 64)
        self.act = Act()
        self.copy = Copy()

    def forward(self, x):
        return self.copy(self.act(self.fc(x)))


@pytest.mark.profile(max_flops_delta=0.5)
def test_net(modelprof):
    modelprof(Net(), input_shape=(8, 64))
"""

GREW_MOST = re.compile(r"layers (?:that|whose) .*\bmost\b", re.IGNORECASE)


def _terminal_layers(text: str) -> list[str]:
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if "layers that grew most (traffic):" in line)
    named = []
    for line in lines[start + 1 :]:
        if not line.startswith("    "):
            break
        named.append(line.split()[0])
    return named


def _markdown_layers(text: str) -> list[str]:
    lines = text.splitlines()
    heads = [i for i, line in enumerate(lines) if GREW_MOST.search(line)]
    named = []
    for i in heads:
        for line in lines[i + 1 :]:
            if not line.strip():
                if named:
                    break
                continue
            if not line.startswith("- "):
                break
            named.append(line[2:].strip("`").split("`")[0].split()[0])
    return named


def _html_layers(page: str) -> list[str]:
    named = []
    for m in re.finditer(r"<h3>([^<]*)</h3>\s*<ul[^>]*>(.*?)</ul>", page, re.DOTALL):
        if GREW_MOST.search(html.unescape(m.group(1))):
            items = re.findall(r"<li>(?:<code>)?([^<]*)", m.group(2))
            named += [html.unescape(item).split()[0] for item in items]
    return named


def test_a_traffic_regression_names_the_same_layers_everywhere(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(test_net=PROJECT)
    (pytester.path / "changed.txt").write_text("0")
    pytester.runpytest_subprocess("--modelprof-update-baselines").assert_outcomes(passed=1)
    (pytester.path / "changed.txt").write_text("1")
    result = pytester.runpytest_subprocess(
        "--modelprof-json=results.json",
        "--modelprof-markdown=report.md",
        "--modelprof-report=report.html",
    )
    result.assert_outcomes(failed=1)
    terminal = _terminal_layers(result.stdout.str())
    assert terminal == ["copy"]  # the layer whose traffic grew; act's FLOPs grew instead

    (test,) = json.loads((pytester.path / "results.json").read_text())["tests"]
    rows = [c for c in test["checks"] if c["detail"].get("layers")]
    assert [c["metric"] for c in rows] == ["traffic"]
    assert [d["name"] for d in rows[0]["detail"]["layers"]] == terminal
    # Every layer that changed rides on the FLOPs row, where the HTML table and chart read it:
    # act's FLOPs grew, copy's traffic grew at equal FLOPs; fc is unchanged and left out.
    (flops,) = [c for c in test["checks"] if c["metric"] == "flops"]
    changes = flops["detail"]["layer_changes"]
    assert [(d["name"], d["change"]) for d in changes] == [("act", "grew"), ("copy", "grew")]
    assert flops["detail"]["baseline_layers"] == 3

    assert _markdown_layers((pytester.path / "report.md").read_text()) == terminal
    assert _html_layers((pytester.path / "report.html").read_text()) == terminal
