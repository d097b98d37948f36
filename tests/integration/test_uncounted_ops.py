"""Uncounted ops: hidden cost that grows is a row that says so, with figures;
a cost formula for a custom op is registered from ``conftest.py`` through a real hook.

Real-engine runs go through a subprocess (see the NB in test_real_engine.py).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from modelprof_testing import custom_op

# A custom op without a cost formula, called CALLS times on a tensor REPEAT times as wide. The
# byte and subgraph counts grow with it, so the limits that would catch it first are off: the
# uncounted-ops row alone must say that the hidden cost grew.
ATTN = """
import pathlib

import pytest
import torch
import torch.nn as nn

HERE = pathlib.Path(__file__).parent
CALLS, REPEAT = (int(v) for v in (HERE / "attn.txt").read_text().split())

""" + custom_op("mylib::attn", "attn") + """

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 8)

    def forward(self, x):
        x = self.fc(x).repeat(1, REPEAT)
        for _ in range(CALLS):
            x = attn(x)
        return x


@pytest.mark.profile(
    max_traffic_delta="ignore", max_peak_activations_delta="ignore",
    max_subgraphs_delta="ignore", max_stages_delta="ignore",
)
def test_net(modelprof):
    modelprof(Net(), input_shape=(2, 8))
"""


def _uncounted_row(path: Path) -> dict[str, object]:
    results = json.loads(path.read_text(encoding="utf-8"))
    (test,) = results["tests"]
    (row,) = [c for c in test["checks"] if c["kind"] == "uncounted"]
    return dict(row)


def _attn_project(pytester: pytest.Pytester, calls: int, repeat: int) -> None:
    """The project with a baseline of ``mylib::attn`` called once on a (2, 8) tensor."""
    pytester.makepyfile(test_net=ATTN)
    (pytester.path / "attn.txt").write_text("1 1")
    pytester.runpytest_subprocess("--modelprof-update-baselines").assert_outcomes(passed=1)
    (pytester.path / "attn.txt").write_text(f"{calls} {repeat}")


@pytest.mark.slow
def test_an_uncounted_op_without_a_baseline_is_new(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_net=ATTN)
    (pytester.path / "attn.txt").write_text("50 1")
    result = pytester.runpytest_subprocess("--modelprof-json=results.json")
    result.assert_outcomes(failed=1)  # no baseline
    row = _uncounted_row(pytester.path / "results.json")
    assert row["verdict"] == "new", row
    assert "unchanged" not in str(row["reason"])
    assert "mylib.attn" in str(row["reason"]) and "\u00d750" in str(row["reason"])


@pytest.mark.slow
def test_an_uncounted_op_that_runs_50_times_as_often_fails_with_its_counts(
    pytester: pytest.Pytester,
) -> None:
    _attn_project(pytester, calls=50, repeat=1)
    result = pytester.runpytest_subprocess()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*uncounted ops: *mylib.attn* \u00d71 \u2192 \u00d750*"])
    assert "unchanged" not in result.stdout.str()


@pytest.mark.slow
def test_an_uncounted_op_that_moves_16_times_the_bytes_fails_with_its_bytes(
    pytester: pytest.Pytester,
) -> None:
    _attn_project(pytester, calls=1, repeat=16)
    result = pytester.runpytest_subprocess()
    result.assert_outcomes(failed=1)
    # One call reads and writes a (2, 8) float32 tensor: 2 * 64 B = 128 B; 16 times as wide:
    # 2 * 1024 B = 2.05 KB.
    result.stdout.fnmatch_lines(["*uncounted ops: *mylib.attn* 128 B \u2192 2.05 KB*"])


# A conftest that prices mylib::scale: one multiply per element (hand-derived below).
FORMULAS = """
from pytest_modelprof.costs import OpCost


def pytest_modelprof_register_formulas(registry):
    @registry.register("mylib::scale", family="pointwise")
    def scale(args, out):
        return OpCost(flops=args["x"].numel)
"""

SCALE = """
import pytest
import torch
import torch.nn as nn


@torch.library.custom_op("mylib::scale", mutates_args=())
def scale(x: torch.Tensor) -> torch.Tensor:
    return x * 2


@scale.register_fake
def _(x):
    return torch.empty_like(x)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 16, bias=False)

    def forward(self, x):
        return scale(self.fc(x))


@pytest.mark.profile(fail_on_uncounted=True)
def test_net(modelprof):
    profile = modelprof(Net(), input_shape=(2, 8))
    # fc: 2 * (2 * 8 * 16) = 512 FLOPs; scale: one per element of its (2, 16) input = 32.
    assert profile.total_flops == 512 + 32
    assert profile.uncounted_ops == []
"""


@pytest.mark.slow
def test_a_conftest_hook_registers_a_cost_formula(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_net=SCALE)
    uncounted = pytester.runpytest_subprocess("--modelprof-update-baselines")
    uncounted.assert_outcomes(failed=1)
    # The hint names the hook that exists.
    uncounted.stdout.fnmatch_lines(["*mylib.scale.default x1*pytest_modelprof_register_formulas*"])
    pytester.makeconftest(FORMULAS)
    pytester.runpytest_subprocess("--modelprof-update-baselines").assert_outcomes(passed=1)
    pytester.runpytest_subprocess().assert_outcomes(passed=1)
    # xdist workers load the conftest and call the hook themselves.
    pytester.runpytest_subprocess("-n", "1").assert_outcomes(passed=1)


# A hook that gives aten::mm a second formula: the built-in one stays, the hook is named.
CLASHING = """
from pytest_modelprof.costs import OpCost


def pytest_modelprof_register_formulas(registry):
    @registry.register("aten::mm", family="linear")
    def mm(args, out):
        return OpCost(flops=1)
"""


@pytest.mark.slow
def test_a_hook_that_clashes_with_a_builtin_formula_fails_naming_the_hook(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(test_net=SCALE)
    pytester.makeconftest(CLASHING)
    result = pytester.runpytest_subprocess("--modelprof-update-baselines")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*modelprof: pytest_modelprof_register_formulas: *aten::mm*"])
    result.stdout.no_fnmatch_line("*Traceback*")
    assert not (pytester.path / "baselines").exists()
