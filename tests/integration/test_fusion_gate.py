"""A pull request that breaks a fusion fails its test on subgraphs, with FLOPs unchanged.
Real engine, subprocess run (see test_real_engine.py)."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.slow

PROJECT = """
import pathlib

import pytest
import torch.nn as nn

BROKEN = pathlib.Path(__file__).with_name("broken.txt").read_text() == "1"


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(8, 16, 3, padding=1, bias=False)
        self.bn = nn.BatchNorm2d(16)
        self.relu = nn.ReLU()

    def forward(self, x):
        y = self.conv(x)
        if BROKEN:  # a refactor slips a copy between the conv and its norm
            y = y.clone()
        return self.relu(self.bn(y))


@pytest.mark.profile(max_flops_delta=0.0)
def test_block(modelprof):
    modelprof(Block(), input_shape=(1, 8, 16, 16))
"""


def test_broken_fusion_fails_on_subgraphs(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_block=PROJECT)
    broken = pytester.path / "broken.txt"
    broken.write_text("0")
    pytester.runpytest_subprocess("--modelprof-update-baselines").assert_outcomes(passed=1)
    broken.write_text("1")
    result = pytester.runpytest_subprocess()
    result.assert_outcomes(failed=1)
    # conv+norm+activation was one kernel; the copy splits it into the conv and a
    # copy+norm+activation chain, and the conv output now goes through memory.
    result.stdout.fnmatch_lines_random(
        [
            "*regressed against*",
            "*subgraphs: 1 \u2192 2 (+100.0 %, limit exact)*",
            "*traffic: * \u2192 * (+*%, limit exact)*",
        ]
    )
    assert "FLOPs: " not in result.stdout.str()  # the FLOPs did not change
