"""The predicted GPU time is gated like a count: a change that lowers FLOPs but costs more GPU
time (a dense 3x3 convolution made depthwise + pointwise with more channels, plus a norm) fails
``max_predicted_time_delta`` while its FLOPs row passes.

Subprocess runs, as in test_memory_gate.py."""

from __future__ import annotations

import json

import pytest

PROJECT = """
import pathlib

import pytest
import torch.nn as nn

VARIANT = pathlib.Path(__file__).with_name("variant.txt").read_text().strip()


def block():
    if VARIANT == "dense":
        return nn.Sequential(nn.Conv2d(64, 64, 3, padding=1), nn.ReLU())
    # Expand to 128 channels, a depthwise 3x3, project back: half the FLOPs, more kernels and
    # three times the activation traffic.
    return nn.Sequential(
        nn.Conv2d(64, 128, 1), nn.BatchNorm2d(128), nn.ReLU(),
        nn.Conv2d(128, 128, 3, padding=1, groups=128), nn.BatchNorm2d(128), nn.ReLU(),
        nn.Conv2d(128, 64, 1),
    )


# Only FLOPs and the predicted time are judged: the byte counts and fused kernels that also
# grow are what the prediction prices.
@pytest.mark.profile(max_predicted_time_delta=0.05, max_flops_delta=0.05,
                     max_traffic_delta="ignore", max_peak_activations_delta="ignore",
                     max_subgraphs_delta="ignore",
                     max_stages_delta="ignore")
def test_block(modelprof):
    modelprof(nn.Sequential(block(), block()).eval(), input_shape=(64, 64, 56, 56))
"""


def test_fewer_flops_but_more_predicted_gpu_time_fails_the_predicted_limit(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(test_gpu=PROJECT)
    (pytester.path / "variant.txt").write_text("dense")
    pytester.runpytest_subprocess("--modelprof-update-baselines").assert_outcomes(passed=1)
    stored = json.loads((pytester.path / "baselines/test_gpu/test_block.json").read_text())
    assert stored["metrics"]["predicted_time"] > 0
    assert stored["measured"]["predicted"]["machine"] == "rtx4090"
    assert stored["measured"]["predicted"]["precision"] == "amp"
    pytester.runpytest_subprocess().assert_outcomes(passed=1)
    (pytester.path / "variant.txt").write_text("separable")
    result = pytester.runpytest_subprocess()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*predicted GPU time: * ms \u2192 * ms (+*%, limit +5.0 %)*"])
    result.stdout.fnmatch_lines(["*regressed against*(1 problem)*"])
    problems = [line for line in result.stdout.lines if "\u2192" in line and "limit" in line]
    assert [line.split(":")[0].strip() for line in problems] == ["predicted GPU time"]
    # the FLOPs column of the summary: half the FLOPs, within its limit
    result.stdout.fnmatch_lines(["regressed*test_gpu.py::test_block*GFLOPs (-50.*%)*"])
