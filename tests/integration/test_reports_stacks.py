"""Rows that are parts of one total (``Metric(stack=...)``) get a stacked bar in the HTML report,
baseline above current, whatever the metrics are: here a toy measured group declared in a
conftest hook, which no renderer knows about (the memory components are the real user:
tests/integration/test_memory_gate.py)."""

from __future__ import annotations

import json
import re
from html import unescape

from modelprof_testing import FAKE_ENGINE, Project

PARTS = '''

from pytest_modelprof.baseline.collector import JsonCollector
from pytest_modelprof.baseline.metrics import Metric
from pytest_modelprof.baseline.tolerance import Exact, Ignore


def count(call):
    return json.loads((ROOT / "crates.json").read_text())


CRATES = JsonCollector("crates", measure_with=count)


def _metric(name, label, stack=None):
    return Metric(
        name=name, label=label, direction="lower", delta_key=f"max_{name}_delta",
        default_delta=Exact() if stack is None else Ignore(),
        formatter=lambda v: f"{v:g} kg", summary=False, collector=CRATES.name, stack=stack,
    )


def pytest_modelprof_register_collectors(config):
    return [CRATES]


def pytest_modelprof_register_metrics(config):
    return [
        _metric("crates", "crates"),
        _metric("crates_apples", "crates: apples", "crates"),
        _metric("crates_pears", "crates: pears", "crates"),
    ]
'''

TESTS = """
import pytest

@pytest.mark.profile(model="fake:tiny", max_crates_delta=0.5)
def test_crates():
    pass
"""


def test_a_toy_group_of_parts_gets_a_stacked_bar(project: Project) -> None:
    project.pytester.makeconftest(FAKE_ENGINE + PARTS)
    project.pytester.makepyfile(test_models=TESTS)
    crates = project.root / "crates.json"
    crates.write_text(json.dumps({"crates": 10, "crates_apples": 6, "crates_pears": 3}))
    project.run("--modelprof-update-baselines").assert_outcomes(passed=1)
    crates.write_text(json.dumps({"crates": 12, "crates_apples": 6, "crates_pears": 6}))
    project.run("--modelprof-report=r.html").assert_outcomes(passed=1)
    html = (project.root / "r.html").read_text()
    segment = r'<rect [^>]*class="seg-[^"]*"><title>([^<]*)</title>'
    titles = [unescape(t) for t in re.findall(segment, html)]
    # The parts on each bar, with their share of the total; the total's rest is its own segment.
    assert titles == [
        "apples: baseline 6 kg (60.0 % of 10 kg)",
        "pears: baseline 3 kg (30.0 % of 10 kg)",
        "the rest of crates: baseline 1 kg (10.0 % of 10 kg)",
        "apples: current 6 kg (50.0 % of 12 kg)",
        "pears: current 6 kg (50.0 % of 12 kg)",
    ]
    assert "<strong>crates: baseline vs current</strong>" in html
