"""CPU instruction counts under callgrind (issue 24), as pytest runs.

The valgrind run is one test (marked ``valgrind``, run with ``-m valgrind``: each session starts
valgrind, and importing torch under it costs about a minute of CPU): it writes baselines under ``-n
2``, checks that a model which gained a Python-level loop of small ops fails
``max_instructions_delta=0.01`` naming the counts while the unchanged one passes, and that
rewriting the unchanged one's baseline leaves it byte-identical. It is skipped where valgrind is
missing; the runs without valgrind (one clear error, or a skip) need none.
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
"""

TESTS = """
import pytest
from nets import Grown, Net


@pytest.mark.profile(max_instructions_delta=0.01)
def test_same(modelprof):
    modelprof(Net(), input_shape=(1, 3, 32, 32))


@pytest.mark.profile(max_instructions_delta=0.01)
def test_grown(modelprof):
    modelprof(Grown(), input_shape=(1, 3, 32, 32))
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
    written.assert_outcomes(passed=2)
    base = pytester.path / "baselines" / "test_costs"
    same = (base / "test_same.json").read_bytes()
    stored = json.loads(same)
    assert stored["metrics"]["instructions"] > 0
    assert stored["environment"]["cpu"] and "cpu_flags" in stored["environment"]
    # Grown's forward gains 30 multiplications (each about 30,000 instructions at this size).
    pytester.makepyfile(nets=NETS.format(loops=30))
    checked = pytester.runpytest_subprocess()
    checked.assert_outcomes(passed=1, failed=1)
    checked.stdout.fnmatch_lines(
        [
            "*test_costs.py::test_grown*regressed*",
            "*instructions: * instructions \u2192 * instructions (+*%, limit +1.0 %)*",
        ]
    )
    # The unchanged model, recorded again in another session: the same file, byte for byte.
    pytester.runpytest_subprocess(
        "--modelprof-update-baselines", "-k", "test_same"
    ).assert_outcomes(passed=1)
    assert (base / "test_same.json").read_bytes() == same


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
