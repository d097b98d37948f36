"""Training and inference memory are gated: a budget holds without a baseline, a delta against
it, each component is a row, and the marker says which step (optimizer, precision, sharding).

Subprocess runs, as in test_real_engine.py (pytester's inline runs and lazily imported torch
modules do not mix)."""

from __future__ import annotations

import json

import pytest

PROJECT = """
import pathlib

import pytest
import torch.nn as nn

WIDTH = int(pathlib.Path(__file__).with_name("width.txt").read_text())


@pytest.mark.profile(max_train_memory_delta=0.05, optimizer="adamw", precision="bf16-mixed")
def test_train(modelprof):
    modelprof(nn.Sequential(nn.Linear(64, WIDTH), nn.ReLU(), nn.Linear(WIDTH, 8)),
              input_shape=(4, 64))
"""

BUDGET = """
import pytest
import torch.nn as nn


@pytest.mark.profile(max_train_memory="10KB", max_inference_memory="1MB", optimizer="sgd")
def test_budget(modelprof):
    modelprof(nn.Sequential(nn.Linear(64, 256), nn.Linear(256, 8)), input_shape=(4, 64))
"""


def test_a_change_that_raises_training_memory_fails_with_the_figures(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(test_mem=PROJECT)
    (pytester.path / "width.txt").write_text("128")
    pytester.runpytest_subprocess("--modelprof-update-baselines").assert_outcomes(passed=1)
    stored = json.loads((pytester.path / "baselines/test_mem/test_train.json").read_text())
    # fp32 master weights (4) + fp32 grads (4) + AdamW m, v (8) per parameter: the components
    params = 64 * 128 + 128 + 128 * 8 + 8
    assert stored["metrics"]["train_memory_parameters"] == 4 * params
    assert stored["metrics"]["train_memory"] >= 16 * params
    assert stored["measured"]["memory"]["train_settings"]["precision"] == "bf16-mixed"
    pytester.runpytest_subprocess().assert_outcomes(passed=1)
    (pytester.path / "width.txt").write_text("256")  # the hidden layer doubles
    result = pytester.runpytest_subprocess()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*train memory: * \u2192 * (+*%, limit +5.0 %)*"])


def test_a_budget_fails_without_a_baseline(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_budget=BUDGET)
    result = pytester.runpytest_subprocess("--modelprof-update-baselines")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*train memory*over*budget*10 KB*"])
    assert "inference memory" not in "\n".join(
        line for line in result.stdout.lines if "over" in line and "budget" in line
    )


def test_a_bad_step_option_names_the_marker(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_bad="""
        import pytest

        @pytest.mark.profile(model="resnet18", max_train_memory="1GB", precision="bf16mix")
        def test_bad():
            pass
        """
    )
    result = pytester.runpytest_subprocess()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*marker on test_bad.py::test_bad: unknown precision 'bf16mix';"
            " did you mean 'bf16-mixed'*"
        ]
    )
