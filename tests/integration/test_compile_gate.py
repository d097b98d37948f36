"""A model that stops compiling cleanly fails its test, naming the break and its line.

Real engine and real Dynamo in a subprocess: ``model_def.py``'s forward gains a Python branch
on ``float(x.mean())``, which splits the ``torch.compile`` graph in two.
"""

from __future__ import annotations

import json

import pytest

pytestmark = pytest.mark.slow

CLEAN = """\
import torch
import torch.nn as nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 8)

    def forward(self, x):
        x = self.fc(x)
        return torch.relu(x)
"""

BRANCHY = """\
import torch
import torch.nn as nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 8)

    def forward(self, x):
        x = self.fc(x)
        if float(x.mean()) > 0:  # a data-dependent branch: a graph break
            x = x * 2
        return torch.relu(x)
"""

BREAK_LINE = next(i for i, line in enumerate(BRANCHY.splitlines(), 1) if "float(x.mean())" in line)

TEST = """
import pytest
from model_def import Net


@pytest.mark.profile({limit})
def test_net(modelprof):
    modelprof(Net(), input_shape=(2, 8))
"""


def _project(pytester: pytest.Pytester, limit: str, model: str) -> None:
    pytester.makepyfile(test_net=TEST.format(limit=limit), model_def=model)


def test_a_break_fails_the_absolute_budget_without_a_baseline(pytester: pytest.Pytester) -> None:
    _project(pytester, "max_graph_breaks=0", BRANCHY)
    # Even while (re)writing baselines: rewriting cannot fix an absolute budget.
    result = pytester.runpytest_subprocess("--modelprof-update-baselines")
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    assert "graph breaks: 1 is over budget max_graph_breaks=0" in out
    assert f"new graph break: model_def.py:{BREAK_LINE}:" in out

    pytester.makepyfile(model_def=CLEAN)  # the branch removed
    pytester.runpytest_subprocess("--modelprof-update-baselines").assert_outcomes(passed=1)
    pytester.runpytest_subprocess().assert_outcomes(passed=1)


def test_a_new_break_fails_the_delta_against_a_clean_baseline(pytester: pytest.Pytester) -> None:
    _project(pytester, "max_graph_breaks_delta=0", CLEAN)
    pytester.runpytest_subprocess("--modelprof-update-baselines").assert_outcomes(passed=1)
    baseline = json.loads((pytester.path / "baselines" / "test_net" / "test_net.json").read_text())
    assert baseline["metrics"]["graph_breaks"] == 0 and baseline["metrics"]["graphs"] == 1
    assert baseline["compile"]["break_reasons"] == []

    pytester.makepyfile(model_def=BRANCHY)
    report = pytester.path / "results.json"
    html = pytester.path / "report.html"
    result = pytester.runpytest_subprocess(
        f"--modelprof-json={report}", f"--modelprof-report={html}"
    )
    result.assert_outcomes(failed=1)
    # The HTML report lists the breaks with their source lines, and the graph count.
    page = html.read_text()
    assert "Graph breaks (1), graphs 1 \u2192 2" in page
    assert f"model_def.py:{BREAK_LINE}:" in page
    out = result.stdout.str()
    assert "graph breaks: 0 \u2192 1" in out
    assert f"new graph break since the baseline: model_def.py:{BREAK_LINE}:" in out
    # Every report reads the same row: its detail lists the new break.
    data = json.loads(report.read_text())
    (row,) = [c for c in data["tests"][0]["checks"] if c["metric"] == "graph_breaks"]
    assert row["verdict"] == "regressed"
    (fresh,) = row["detail"]["new_breaks"]
    assert fresh["location"] == f"model_def.py:{BREAK_LINE}" and fresh["reason"]
    assert row["detail"]["graphs"] == 2 and row["detail"]["baseline_graphs"] == 1

    pytester.makepyfile(model_def=CLEAN)
    pytester.runpytest_subprocess().assert_outcomes(passed=1)


def test_tests_without_compile_limits_do_not_compile(pytester: pytest.Pytester) -> None:
    _project(pytester, "max_flops_delta=0", BRANCHY)
    pytester.runpytest_subprocess("--modelprof-update-baselines").assert_outcomes(passed=1)
    data = json.loads((pytester.path / "baselines" / "test_net" / "test_net.json").read_text())
    assert "compile" not in data
    assert not {"graphs", "graph_breaks", "recompiles"} & set(data["metrics"])


def test_recompiles_over_the_declared_batch_sizes(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        model_def=CLEAN,
        test_net="""
import pytest
from model_def import Net


@pytest.mark.profile(max_recompiles=0, sweep={"batch": [2, 4, 8]})
def test_net(modelprof):
    modelprof(Net(), input_shape=(2, 8))
""",
    )
    # torch.compile's default (automatic dynamic shapes) recompiles once, when batch 4
    # shows the batch dimension varies; after that one graph serves every size.
    result = pytester.runpytest_subprocess("--modelprof-update-baselines")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*recompiles: 1 is over budget max_recompiles=0*dynamic=None*"])
