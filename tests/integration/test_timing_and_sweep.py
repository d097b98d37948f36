"""Latency limits (noise-robust; a decisive regression beyond the limit fails,
timing_verdicts='warn' keeps warn-only) and growth-exponent limits over a marker's sweep=, with
the real engine. Subprocess runs (see test_real_engine.py)."""

from __future__ import annotations

import json

import pytest
from modelprof_testing import TIMED_MODEL

pytestmark = pytest.mark.slow

TIMED = f"""
import pytest
{TIMED_MODEL}

@pytest.mark.profile(max_latency_delta=0.25, timing_rounds=30)
def test_default(modelprof):
    modelprof(Net(), input_shape=(8, 64))


@pytest.mark.profile(max_latency_delta=0.1, timing_rounds=30, timing_verdicts="warn")
def test_warns(modelprof):
    modelprof(Net(), input_shape=(8, 64))


@pytest.mark.profile(max_latency_delta=0.1, timing_rounds=30, timing_verdicts="fail")
def test_strict(modelprof):
    modelprof(Net(), input_shape=(8, 64))
"""


def test_a_decisive_slowdown_fails_and_a_warning_has_its_own_status(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(test_timed=TIMED)
    extra = pytester.path / "extra_ms.txt"
    extra.write_text("0")
    pytester.runpytest_subprocess("--modelprof-update-baselines").assert_outcomes(passed=3)
    (baseline,) = (pytester.path / "baselines" / "test_timed").glob("test_warns.json")
    assert '"timing": {' in baseline.read_text()  # the rounds are stored with the baseline
    # +2 ms on a forward of a few microseconds: a slowdown no noise explains.
    extra.write_text("2")
    result = pytester.runpytest_subprocess(
        "-rA", "--modelprof-json=r.json", "--modelprof-report=r.html", "--modelprof-markdown=r.md"
    )
    result.assert_outcomes(passed=1, failed=2)
    result.stdout.fnmatch_lines_random(
        [
            "*test_timed.py::test_default regressed*",
            "*latency: regressed: * \u2192 * ms (fastest 10 %), * % slower * (limit +25 %), conf*",
            "*test_timed.py::test_strict regressed*",
            "warning *test_timed.py::test_warns *",  # the status column of the terminal summary
            "*warn latency: regressed: *timing_verdicts='warn' keeps this a warning*",
        ]
    )
    statuses = {
        t["nodeid"]: t["status"]
        for t in json.loads((pytester.path / "r.json").read_text())["tests"]
    }
    assert statuses == {
        "test_timed.py::test_default": "regressed",
        "test_timed.py::test_strict": "regressed",
        "test_timed.py::test_warns": "warning",
    }
    html = (pytester.path / "r.html").read_text()
    assert 'data-status="warning"' in html and "1 warning" in html and "ok</li>" not in html
    assert "3 profiles: 2 regressed, 1 warning" in (pytester.path / "r.md").read_text()


SWEPT = """
import pytest
import torch
import torch.nn as nn


class SelfScores(nn.Module):
    def forward(self, x):  # an L x L product: FLOPs grow with seq_len squared
        return torch.softmax(x @ x.transpose(1, 2), dim=-1) @ x


@pytest.mark.profile(sweep={"seq_len": [8, 16, 32]}, max_flops_growth=1.2)
def test_linear(modelprof):
    modelprof(nn.Linear(16, 16), input_shape=(1, 8, 16))


@pytest.mark.profile(sweep={"seq_len": [8, 16, 32]}, max_flops_growth=1.2)
def test_quadratic(modelprof):
    modelprof(SelfScores(), input_shape=(1, 8, 16))


@pytest.mark.profile(model="resnet18", max_flops_growth=1.2)
def test_growth_without_sweep():
    pass
"""


def test_growth_exponent_limit_over_a_sweep(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_swept=SWEPT)
    result = pytester.runpytest_subprocess("--modelprof-update-baselines")
    result.assert_outcomes(passed=1, failed=2)
    result.stdout.fnmatch_lines_random(
        [
            "*FLOPs growth (seq_len): grows as seq_len^2.0* above max_flops_growth=1.2*",
            "*marker on test_swept.py::test_growth_without_sweep: max_flops_growth "
            "needs a sweep*",
        ]
    )
    assert "test_linear" not in "".join(
        line for line in result.stdout.lines if line.startswith("FAILED")
    )
