"""Output a person reads: the modelprof block fits the terminal and says each thing
once, the cause first. Real engine, subprocess runs (see the NB in test_real_engine.py)."""

from __future__ import annotations

import re

import pytest
from modelprof_testing import Project

SCENARIOS = """
import pathlib
import time

import pytest
import torch
import torch.nn as nn

CHANGED = (pathlib.Path(__file__).parent / "changed.txt").read_text().strip() == "1"


class SmallCNN(nn.Module):
    def __init__(self, width=8, extra=False, branch=False, busy_ms=0.0):
        super().__init__()
        self.conv = nn.Conv2d(3, width, 3, padding=1)
        self.head = nn.Linear(width, 10)
        self.extra, self.branch, self.busy_ms = extra, branch, busy_ms

    def forward(self, x):
        y = self.conv(x)
        if self.extra:
            y = torch.relu(y)
        if self.branch:
            if y.sum() > 0:  # data-dependent: a graph break
                y = y * 2
            time.sleep(0)  # a call Dynamo skips: another break, and its UserWarning
        if self.busy_ms:  # an injected slowdown: a busy-wait, like real work
            end = time.perf_counter() + self.busy_ms / 1000
            while time.perf_counter() < end:
                pass
        return self.head(y.mean((2, 3)))


@pytest.mark.profile()
def test_widen(modelprof):
    modelprof(SmallCNN(width=16 if CHANGED else 8), input_shape=(1, 3, 16, 16))


@pytest.mark.profile()
def test_extra_op(modelprof):
    modelprof(SmallCNN(extra=CHANGED), input_shape=(1, 3, 16, 16))


@pytest.mark.profile(max_graph_breaks=0)
def test_graph_break(modelprof):
    modelprof(SmallCNN(branch=CHANGED), input_shape=(1, 3, 16, 16))


@pytest.mark.profile(max_latency_delta=0.25, timing_rounds=20)
def test_slowdown(modelprof):
    modelprof(SmallCNN(busy_ms=3.0 if CHANGED else 0.0), input_shape=(1, 3, 16, 16))


@pytest.mark.profile()
def test_input_change(modelprof):
    size = 24 if CHANGED else 16
    modelprof(SmallCNN(), input_shape=(1, 3, size, size))


LIMIT = {"max_flop_delta": 0.1} if CHANGED else {"max_flops_delta": 0.1}


@pytest.mark.profile(**LIMIT)
def test_typo(modelprof):
    modelprof(SmallCNN(), input_shape=(1, 3, 16, 16))


def _renamed(modelprof):
    modelprof(SmallCNN(width=4), input_shape=(1, 3, 8, 8))


if CHANGED:
    test_after_rename = pytest.mark.profile()(_renamed)
else:
    test_before_rename = pytest.mark.profile()(_renamed)
"""

FAILING = [
    "test_widen",
    "test_extra_op",
    "test_graph_break",
    "test_slowdown",
    "test_input_change",
    "test_typo",
    "test_after_rename",
]


@pytest.mark.slow
@pytest.mark.parametrize("columns", [100, 80])
def test_the_modelprof_block_fits_the_terminal_and_says_each_failure_once(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, columns: int
) -> None:
    monkeypatch.setenv("COLUMNS", str(columns))
    pytester.makepyfile(test_scenarios=SCENARIOS)
    changed = pytester.path / "changed.txt"
    changed.write_text("0")
    pytester.runpytest_subprocess("--modelprof-update-baselines").assert_outcomes(passed=7)
    changed.write_text("1")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--modelprof-json=r.json")
    result.assert_outcomes(failed=len(FAILING))
    out = result.stdout.lines
    text = "\n".join(out)
    # pytest's own header lines (its rootdir, the platform, the installed plugins) are pytest's
    # to fit: the plugin list grows with whatever else the environment installed.
    header = ("rootdir:", "platform ", "cachedir:", "plugins:")
    ours = [line for line in out if not line.startswith(header)]
    wide = [line for line in ours if len(line) > columns]
    assert wide == [], f"{len(wide)} lines wider than {columns}: {wide[:3]}"
    # Each failure is printed once: under FAILURES, not again under the summary table.
    block = text[text.index("= modelprof =") :]
    assert "limit exact" not in block and "FAIL " not in block
    for name in FAILING:
        assert len(re.findall(rf"_ {name} _", text)) == 1, name
    assert text.count("test_scenarios.py::test_widen regressed against") == 1
    # The cause first: the input change heads the failure, before the rows it explains.
    failure = text[text.index("_ test_input_change _") :]
    assert failure.index("inputs changed: 1\u00d73\u00d716\u00d716") < failure.index("FLOPs:")
    # A typo names the near miss, not the marker's whole signature.
    assert "did you mean 'max_flops_delta'" in text
    assert "max_latency_growth" not in text
    # Graph breaks in the user's words, and Dynamo's own warning kept out of pytest's summary.
    assert "data-dependent `if` on a tensor" in text and "generic_jump" not in text
    assert text.count("which Dynamo skips") == 1  # named by the breaks row, not again
    assert "warnings summary" not in text
    # A renamed test: one notice with the git mv that keeps the comparison, no stale listing.
    assert text.count("git mv") == 1
    assert re.search(r"git mv\s+baselines/test_scenarios/test_before_rename\.json", text)
    assert "stale baseline(s)" not in text and "have no baseline" not in text


MARKED = """
import pytest

@pytest.mark.profile(model="fake:tiny", input_shape=(1, 3, 8, 8))
def test_tiny():
    pass
"""


def test_a_failed_limit_is_said_once_and_under_the_table_only_without_tracebacks(
    project: Project,
) -> None:
    project.pytester.makepyfile(test_models=MARKED)
    project.run("--modelprof-update-baselines").assert_outcomes(passed=1)
    project.set_costs(tiny={"flops": 1_100_000})
    row = "FLOPs: 1 MFLOPs \u2192 1.1 MFLOPs (+10.0 %, limit exact)"
    shown = project.run()
    shown.assert_outcomes(failed=1)
    assert shown.stdout.str().count(row) == 1  # under FAILURES only
    # With --tb=no pytest prints no failure, so the summary lists the failed limit.
    quiet = project.run("--tb=no")
    quiet.assert_outcomes(failed=1)
    assert quiet.stdout.str().count(row) == 1
    quiet.stdout.fnmatch_lines([f"  FAIL {row}"])
