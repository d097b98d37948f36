"""Seen before, "what changed is not named": an added ``torch.relu`` fails on several counts, and
the failure names the op, one more call, its layer and the line that added it, in the terminal,
the Markdown and the HTML report. Subprocess runs (see the NB in test_real_engine.py)."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.slow

PROJECT = """
import pathlib

import pytest
import torch
import torch.nn as nn

EXTRA = pathlib.Path(__file__).with_name("extra.txt").read_text().strip() == "1"


class SmallCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, padding=1)
        self.conv2 = nn.Conv2d(8, 8, 3, padding=1)

    def forward(self, x):
        x = torch.relu(self.conv1(x))
        x = self.conv2(x)
        if EXTRA:
            x = torch.relu(x)
        return x.mean()


@pytest.mark.profile(include_backward=True)
def test_cnn(modelprof):
    modelprof(SmallCNN(), input_shape=(8, 3, 32, 32))
"""


def test_an_added_op_is_named_with_its_layer_and_line(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_cnn=PROJECT)
    lines = PROJECT.lstrip("\n").splitlines()  # as makepyfile writes it
    first = next(i for i, line in enumerate(lines) if "torch.relu(self.conv1" in line) + 1
    added = next(i for i, line in enumerate(lines) if "if EXTRA" in line) + 2
    (pytester.path / "extra.txt").write_text("0")
    pytester.runpytest_subprocess("--modelprof-update-baselines").assert_outcomes(passed=1)
    (pytester.path / "extra.txt").write_text("1")
    result = pytester.runpytest_subprocess(
        "--modelprof-report=report.html", "--modelprof-markdown=report.md"
    )
    result.assert_outcomes(failed=1)
    # One more forward call in the model's own forward, named with the lines that call it now
    # (the added one among them); and the backward op it brought with it (no line of model
    # code calls a backward op).
    named = (
        f"aten::relu \u00d71 \u2192 \u00d72 in (model) (SmallCNN) "
        f"at test_cnn.py:{first}, test_cnn.py:{added}"
    )
    result.stdout.fnmatch_lines(
        [
            "*ops whose calls changed (baseline \u2192 current):",
            f"    {named}",
            "    aten::threshold_backward \u00d71 \u2192 \u00d72 in (backward) (autograd)",
        ]
    )
    assert result.stdout.str().count(named) == 1
    for report in ("report.md", "report.html"):
        assert named in (pytester.path / report).read_text(), report
    assert "Op families: baseline vs current" in (pytester.path / "report.html").read_text()
