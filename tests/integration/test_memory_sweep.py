"""Growth exponents of the train and inference memory over a marker's sweep=: each point's step
is estimated (nothing allocated) and ``max_train_memory_growth`` bounds the fit.
Subprocess runs, as in test_memory_gate.py."""

from __future__ import annotations

import json

import pytest

SWEPT = """
import pytest
import torch
import torch.nn as nn


class Scores(nn.Module):
    \"\"\"Attention written out (no fused kernel): the (seq, seq) scores are saved.\"\"\"

    def __init__(self):
        super().__init__()
        self.qkv = nn.Linear(8, 24)

    def forward(self, x):
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        return torch.softmax(q @ k.transpose(1, 2), dim=-1) @ v


def convs():
    return nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.ReLU(), nn.Conv2d(16, 16, 3, padding=1))


@pytest.mark.profile(sweep={"batch": [8, 16, 32]}, max_train_memory_growth=1.05,
                     max_inference_memory_growth=1.05, optimizer="sgd")
def test_linear_in_batch(modelprof):
    modelprof(convs(), input_shape=(8, 3, 32, 32))


@pytest.mark.profile(sweep={"seq_len": [64, 128, 256]}, max_train_memory_growth=1.2)
def test_quadratic_in_seq_len(modelprof):
    modelprof(Scores(), input_shape=(1, 64, 8))


@pytest.mark.profile(model="resnet18", max_train_memory_growth=1.2)
def test_growth_without_sweep():
    pass
"""


def test_memory_growth_exponents_over_a_sweep(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_swept=SWEPT)
    result = pytester.runpytest_subprocess(
        "--modelprof-update-baselines", "--modelprof-json=r.json"
    )
    result.assert_outcomes(passed=1, failed=2)
    result.stdout.fnmatch_lines_random(
        [
            "*train memory growth (seq_len): grows as seq_len^1.* above "
            "max_train_memory_growth=1.2*",
            "*marker on test_swept.py::test_growth_without_sweep: "
            "max_train_memory_growth needs a sweep*",
        ]
    )
    profiles = json.loads((pytester.path / "r.json").read_text())["tests"]
    rows = {
        (p["nodeid"].split("::")[1], c["metric"]): c for p in profiles for c in p["checks"]
    }
    # Activations, gradients of the activations and the inputs grow with the batch; the
    # weights (448 + 2,320 parameters) and their SGD update do not: k = 0.99 here.
    for step in ("train", "inference"):
        row = rows[("test_linear_in_batch", f"{step}_memory_growth[batch]")]
        assert row["verdict"] == "ok"
        assert 0.98 < row["current"] <= 1.0
    # 1 x 256 x 256 fp32 scores (256 KiB) and softmax's output are saved; the linear parts
    # (1 x 256 x 24) are small beside them: the fit (1.89 here) tends to 2.
    quadratic = rows[("test_quadratic_in_seq_len", "train_memory_growth[seq_len]")]
    assert quadratic["verdict"] == "regressed" and 1.8 < quadratic["current"] <= 2.0
