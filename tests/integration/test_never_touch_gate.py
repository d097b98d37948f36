"""The gate never changes the user's module, nor the test process's compiled functions.

Real engine, real Dynamo, real pytest runs: a module-level model with a lazy
layer and Python caches is gated with latency, compile-health and fvcore limits; a later test
of the same session finds it as it was, and a function the test module ``torch.compile``d
before the gate ran still has its compiled code (it does not compile again).
"""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.slow

MODELS = """\
import torch
import torch.nn as nn


class Caches(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 8)
        self.log = []
        self.last = {}

    def forward(self, x):
        self.log.append("forward")
        out = self.fc(x)
        self.last["out"] = out.detach()
        return out


LAZY = nn.Sequential(nn.LazyLinear(8), Caches())
TRACEABLE = Caches()

COMPILES = []


def counting(gm, example_inputs):
    COMPILES.append(1)
    return gm.forward


@torch.compile(backend=counting)
def users_function(x):
    return torch.sin(x) + 1
"""

TESTS = """\
import pytest
import torch

from models import COMPILES, LAZY, TRACEABLE, users_function

X = torch.randn(4)


def test_0_compile_before_the_gate():
    users_function(X)
    assert len(COMPILES) == 1


@pytest.mark.profile(max_latency="1e6ms", timing_rounds=10, max_graph_breaks=9)
def test_1_latency_and_compile(modelprof):
    modelprof(LAZY, input_shape=(2, 8))


@pytest.mark.profile(fvcore=True, max_fvcore_delta=0.5)
def test_2_fvcore(modelprof):
    modelprof(TRACEABLE, input_shape=(2, 8))


def test_3_the_models_are_as_they_were():
    assert LAZY[0].has_uninitialized_params()  # never materialised
    assert LAZY[1].log == [] and LAZY[1].last == {}
    assert TRACEABLE.log == [] and TRACEABLE.last == {}


def test_4_compiled_code_survived_the_gate():
    users_function(X)
    assert len(COMPILES) == 1  # no recompilation
"""


def test_the_gate_leaves_the_module_and_the_compiled_functions_alone(
    pytester: pytest.Pytester,
) -> None:
    pytest.importorskip("fvcore")
    pytester.makepyfile(models=MODELS, test_gate=TESTS)
    result = pytester.runpytest_subprocess(
        "--modelprof-update-baselines", "-p", "no:randomly", "-p", "no:warnings"
    )
    result.assert_outcomes(passed=5)
