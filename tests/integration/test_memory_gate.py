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


def _titles(html: str, css: str) -> list[str]:
    """The hover titles of the SVG rects of class ``css`` (the segments of a stacked bar)."""
    import re
    from html import unescape

    found = re.findall(rf'<rect [^>]*class="{css}[^"]*"><title>([^<]*)</title>', html)
    return [unescape(t) for t in found]


def test_the_html_report_stacks_the_memory_components(pytester: pytest.Pytester) -> None:
    from pytest_modelprof.units import format_bytes

    pytester.makepyfile(test_mem=PROJECT)
    (pytester.path / "width.txt").write_text("128")
    pytester.runpytest_subprocess("--modelprof-update-baselines").assert_outcomes(passed=1)
    before = json.loads((pytester.path / "baselines/test_mem/test_train.json").read_text())
    (pytester.path / "width.txt").write_text("256")
    result = pytester.runpytest_subprocess("--modelprof-report=r.html", "--modelprof-json=r.json")
    result.assert_outcomes(failed=1)
    html = (pytester.path / "r.html").read_text()
    rows = json.loads((pytester.path / "r.json").read_text())["tests"][0]["checks"]
    now = {r["metric"]: r["current"] for r in rows}
    assert 'class="chart stack"' in html
    segments = _titles(html, "seg-")
    shown = 0
    for part in ("parameters", "gradients", "optimizer_state", "activations", "transient"):
        name = part.replace("_", " ")
        was, cur = before["metrics"][f"train_memory_{part}"], now[f"train_memory_{part}"]
        for side, value in (("baseline", was), ("current", cur)):
            # one segment per component on each bar, carrying its bytes (none for 0 bytes:
            # at this peak, the optimizer's update, no activation is alive)
            found = [t for t in segments if t.startswith(f"{name}: {side} ")]
            if value:
                assert [t.partition(" (")[0] for t in found] == [
                    f"{name}: {side} {format_bytes(value)}"
                ]
                shown += 1
            else:
                assert found == []
    assert shown >= 8  # parameters, gradients, optimizer state, transient on both bars
    for side, values in (("baseline", before["metrics"]), ("current", now)):
        assert f">{side} {format_bytes(values['train_memory'])}</text>" in html  # bar's total


CHECKPOINTED = """
import torch.nn as nn
from torch.utils.checkpoint import checkpoint


class Net(nn.Module):
    \"\"\"Three residual blocks; checkpointing switched on as transformers models do it.\"\"\"

    def __init__(self):
        super().__init__()
        self.blocks = nn.ModuleList(
            nn.Sequential(nn.Linear(64, 512), nn.GELU(), nn.Linear(512, 64)) for _ in range(3)
        )
        self.kwargs = None

    def gradient_checkpointing_enable(self, gradient_checkpointing_kwargs=None):
        self.kwargs = dict(gradient_checkpointing_kwargs or {})

    def forward(self, x):
        for block in self.blocks:
            x = x + (block(x) if self.kwargs is None else checkpoint(block, x, **self.kwargs))
        return x


def net():
    return Net()
"""

CHECKPOINTING_TESTS = """
import pytest


@pytest.mark.profile(model="tiny_net:net", input_shape=(512, 64), max_train_memory="1GB",
                     optimizer="sgd", checkpointing=True)
def test_checkpointed():
    pass


@pytest.mark.profile(model="tiny_net:net", input_shape=(512, 64), max_train_memory="1GB",
                     optimizer="sgd")
def test_plain():
    pass


@pytest.mark.profile(model="tiny_net:net", input_shape=(512, 64), max_train_memory="1GB",
                     optimizer="sgd", checkpointing="yes")
def test_bad():
    pass
"""


def test_marker_checkpointing_changes_the_estimate_as_the_cli_flag_does(
    pytester: pytest.Pytester,
) -> None:
    import sys

    pytester.makepyfile(tiny_net=CHECKPOINTED, test_ckpt=CHECKPOINTING_TESTS)
    result = pytester.runpytest_subprocess("--modelprof-update-baselines")
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines(
        ["*marker on test_ckpt.py::test_bad: checkpointing must be True or False, got 'yes'*"]
    )

    def stored(test: str) -> int:
        doc = json.loads((pytester.path / f"baselines/test_ckpt/{test}.json").read_text())
        value: int = doc["metrics"]["train_memory"]
        return value

    def cli(*flags: str) -> int:
        done = pytester.run(
            sys.executable, "-m", "pytest_modelprof.cli", "memory", "tiny_net:net", "--train",
            "--input-shape", "512,64", "--optimizer", "sgd", "--capacity", "1GB",
            "--no-largest-batch", "--json", *flags,
        )
        assert done.ret == 0, done.stderr.str()
        peak: int = json.loads(done.stdout.str())["memory"]["peak_bytes"]
        return peak

    assert stored("test_checkpointed") == cli("--checkpointing") < cli() == stored("test_plain")
