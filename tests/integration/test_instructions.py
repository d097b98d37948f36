"""CPU instruction counts under callgrind, as pytest runs.

The valgrind runs are marked ``valgrind`` (run with ``-m valgrind``: each session starts valgrind,
and importing torch under it costs about a minute of CPU). One writes baselines under ``-n 2``,
checks that a model which gained a Python-level loop of small ops in its forward, and one that
gained it in its backward (``include_backward=True``: the training step is gated), fail
``max_instructions_delta=0.01`` naming the counts while the unchanged ones pass, and that
rewriting the unchanged ones' baselines leaves them byte-identical. Another measures a model of
many small ops repeatedly in one server: the counts agree within 0.1 %. They are skipped where
valgrind is missing; the runs without valgrind (one clear error, or a skip) need none.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

NETS = """
import torch
from torch import nn

LOOPS = {loops}


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.c1 = nn.Conv2d(3, 16, 3, padding=1)
        self.c2 = nn.Conv2d(16, 16, 3, padding=1)
        self.fc = nn.Linear(16, 4)

    def forward(self, x):
        x = torch.relu(self.c1(x))
        x = torch.relu(self.c2(x))
        return self.fc(x.mean((2, 3)))


class Grown(Net):
    def forward(self, x):
        x = torch.relu(self.c1(x))
        for _ in range(LOOPS):  # the change under test: a loop of small ops
            x = x * 1.0
        x = torch.relu(self.c2(x))
        return self.fc(x.mean((2, 3)))


class SlowGrad(torch.autograd.Function):
    # The identity, whose backward gains the loop of small ops: the forward is unchanged.

    @staticmethod
    def forward(ctx, x):
        return x.view_as(x)

    @staticmethod
    def backward(ctx, grad):
        for _ in range(LOOPS):
            grad = grad * 1.0
        return grad


class GrownBackward(Net):
    def forward(self, x):
        x = SlowGrad.apply(torch.relu(self.c1(x)))
        x = torch.relu(self.c2(x))
        return self.fc(x.mean((2, 3)))
"""

TESTS = """
import pytest
from nets import Grown, GrownBackward, Net


@pytest.mark.profile(max_instructions_delta=0.01)
def test_same(modelprof):
    modelprof(Net(), input_shape=(1, 3, 32, 32))


@pytest.mark.profile(max_instructions_delta=0.01)
def test_grown(modelprof):
    modelprof(Grown(), input_shape=(1, 3, 32, 32))


@pytest.mark.profile(max_instructions_delta=0.01, include_backward=True)
def test_same_backward(modelprof):
    modelprof(Net(), input_shape=(1, 3, 32, 32))


@pytest.mark.profile(max_instructions_delta=0.01, include_backward=True)
def test_grown_backward(modelprof):
    modelprof(GrownBackward(), input_shape=(1, 3, 32, 32))
"""


@pytest.mark.slow
@pytest.mark.valgrind
@pytest.mark.skipif(shutil.which("valgrind") is None, reason="valgrind is not installed")
def test_a_loop_of_small_ops_fails_and_the_unchanged_model_keeps_its_baseline(
    pytester: pytest.Pytester, request: pytest.FixtureRequest
) -> None:
    # Minutes of CPU (two valgrind servers under -n 2): the README's quick command leaves it
    # out, as it does the zoos; `-m valgrind` (or any -m expression naming it) runs it.
    if "valgrind" not in (request.config.getoption("markexpr") or ""):
        pytest.skip("starts valgrind twice (minutes of CPU): run with -m valgrind")
    pytester.makepyfile(nets=NETS.format(loops=0), test_costs=TESTS)
    written = pytester.runpytest_subprocess(
        "-p", "xdist", "-n", "2", "--modelprof-update-baselines"
    )
    written.assert_outcomes(passed=4)
    base = pytester.path / "baselines" / "test_costs"
    same = (base / "test_same.json").read_bytes()
    stored = json.loads(same)
    assert stored["metrics"]["instructions"] > 0
    assert stored["environment"]["cpu"] and "cpu_flags" in stored["environment"]
    same_backward = (base / "test_same_backward.json").read_bytes()
    before = json.loads((base / "test_grown_backward.json").read_bytes())["measured"]
    # include_backward=True: each phase counted, the training step gated.
    assert before["instructions"]["instructions"] == before["instructions"]["training_step"]
    # Grown's forward gains 30 multiplications (each about 30,000 instructions at this size);
    # GrownBackward's backward gains them, its forward is unchanged.
    pytester.makepyfile(nets=NETS.format(loops=30))
    checked = pytester.runpytest_subprocess()
    checked.assert_outcomes(passed=2, failed=2)
    checked.stdout.fnmatch_lines(
        [
            "*test_costs.py::test_grown*regressed*",
            "*instructions: * instructions \u2192 * instructions (+*%, limit +1.0 %)*",
            "*test_costs.py::test_grown_backward*regressed*",
            "*instructions: * instructions \u2192 * instructions (+*%, limit +1.0 %)*",
        ]
    )
    # The unchanged models, recorded again in another session: the same files, byte for byte;
    # GrownBackward's new record shows where its extra work went.
    pytester.runpytest_subprocess(
        "--modelprof-update-baselines", "-k", "test_same or test_grown_backward"
    ).assert_outcomes(passed=3)
    assert (base / "test_same.json").read_bytes() == same
    assert (base / "test_same_backward.json").read_bytes() == same_backward
    after = json.loads((base / "test_grown_backward.json").read_bytes())["measured"]
    old, new = before["instructions"], after["instructions"]
    assert abs(new["forward"] - old["forward"]) <= 0.005 * old["forward"], (old, new)
    assert new["backward"] > 1.1 * old["backward"], (old, new)


MOBILENET = """
import torch
import torchvision
from torch import nn


class Mobilenet(nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.net = torchvision.models.mobilenet_v3_small(weights=None)

    def forward(self, x):
        return self.net(x)
"""


@pytest.mark.slow
@pytest.mark.valgrind
@pytest.mark.skipif(shutil.which("valgrind") is None, reason="valgrind is not installed")
def test_a_model_of_many_small_ops_counts_the_same_within_a_tenth_of_a_percent(
    request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if "valgrind" not in (request.config.getoption("markexpr") or ""):
        pytest.skip("starts valgrind (minutes of CPU): run with -m valgrind")
    from pytest_modelprof.instructions import InstructionServer

    # mobilenet_v3_small at 32 px: about 20 M instructions over some 150 small ops, each
    # allocating; the allocators' bookkeeping once moved its count by up to 0.3 %. As from
    # the fixture, each request sends a pickled copy whose class the server imports.
    (tmp_path / "mnet.py").write_text(MOBILENET)
    monkeypatch.syspath_prepend(str(tmp_path))
    from mnet import Mobilenet  # type: ignore[import-not-found]

    with InstructionServer() as server:
        counts = [server.measure(Mobilenet(), input_shape=(1, 3, 32, 32)).forward for _ in range(5)]
    assert all(c is not None and c > 1_000_000 for c in counts), counts
    spread = (max(counts) - min(counts)) / (sum(counts) / len(counts))  # type: ignore[arg-type]
    assert spread <= 0.001, f"spread {spread:.4%} over {counts}"


NO_VALGRIND = """
import pytest
import torch.nn as nn


@pytest.mark.profile(max_instructions_delta=0.01)
def test_counted(modelprof):
    modelprof(nn.Linear(4, 4), input_shape=(1, 4))
"""


@pytest.mark.slow
def test_without_valgrind_one_error_says_how_to_install_it_or_the_test_skips(
    pytester: pytest.Pytester, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makepyfile(test_counted=NO_VALGRIND)
    empty = tmp_path / "bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))  # nothing on PATH: no valgrind
    failed = pytester.runpytest_subprocess("--modelprof-update-baselines")
    failed.assert_outcomes(failed=1)
    failed.stdout.fnmatch_lines(
        [
            "*valgrind is not on PATH: install it with `apt-get install valgrind`*"
            "--modelprof-instructions=skip*"
        ]
    )
    skipped = pytester.runpytest_subprocess("--modelprof-instructions=skip", "-rs")
    skipped.assert_outcomes(skipped=1)
    skipped.stdout.fnmatch_lines(["SKIPPED*apt-get install valgrind*"])
    assert not (pytester.path / "baselines").exists()
