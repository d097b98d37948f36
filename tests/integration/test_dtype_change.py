"""A dtype the test chose is the test's change, never the environment's.

The environment a count may be let off for is the torch version, the device type and the CPU;
the dtype, the input shapes and the capture mode follow from the test and the model, so a
change of one is judged by the limits like any other cost change, and the failure says what
changed. Real-engine runs go through a subprocess (see the NB in test_real_engine.py).
"""

from __future__ import annotations

import json

import pytest

pytestmark = pytest.mark.slow

DOUBLED = """
import pathlib

import pytest
import torch
import torch.nn as nn

HOW = pathlib.Path(__file__).with_name("how.txt").read_text().strip()


@pytest.mark.profile()
def test_mlp(modelprof):
    net = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4))
    if HOW == "module":
        net.double()
        modelprof(net, input_shape=(2, 8))
    elif HOW == "fixture":
        modelprof(net, input_shape=(2, 8), dtype=torch.float64)
    else:
        modelprof(net, input_shape=(2, 8))
"""


@pytest.mark.parametrize("how", ["module", "fixture"])
def test_a_dtype_the_test_chose_fails_and_is_named(pytester: pytest.Pytester, how: str) -> None:
    pytester.makepyfile(test_mlp=DOUBLED)
    (pytester.path / "how.txt").write_text("float32")
    pytester.runpytest_subprocess("--modelprof-update-baselines").assert_outcomes(passed=1)
    (pytester.path / "how.txt").write_text(how)
    result = pytester.runpytest_subprocess("--modelprof-json=results.json")
    text = result.stdout.str()
    # Memory doubles (float64 takes twice the bytes): a cost change under the exact default.
    result.assert_outcomes(failed=1)
    assert "another environment" not in text
    result.stdout.fnmatch_lines(
        [
            "*dtype changed: float32 \u2192 float64*",
            "*traffic: * \u2192 * (+100.0 %, limit exact)*",
        ]
    )
    (test,) = json.loads((pytester.path / "results.json").read_text())["tests"]
    verdicts = {c["metric"]: c["verdict"] for c in test["checks"]}
    assert verdicts["traffic"] == "regressed" and "warning" not in verdicts.values()
    assert test["environment"] == []
