"""A marker's sweep= over a builder keyword: the model is rebuilt per value and the growth
exponent along that axis is gated like batch or seq_len. Subprocess runs with the real engine."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.slow

FACTORY = """
import torch.nn as nn


def make(layers=1, width=16):
    return nn.Sequential(*[nn.Linear(width, width) for _ in range(layers)])
"""

TESTS = """
import pytest
import torch.nn as nn


@pytest.mark.profile(model="depthnet:make", input_shape=(2, 16), sweep={"layers": [1, 2, 4]},
                     max_flops_growth=1.1)
def test_linear_in_depth():
    pass


@pytest.mark.profile(model="depthnet:make", input_shape=(2, 16), sweep={"layers": [1, 2, 4]},
                     max_flops_growth=0.5)
def test_sublinear_limit():
    pass


@pytest.mark.profile(sweep={"layers": [1, 2]}, max_flops_growth=1.1)
def test_a_module_cannot_be_rebuilt(modelprof):
    modelprof(nn.Linear(4, 4), input_shape=(1, 4))
"""


def test_marker_sweep_over_a_builder_keyword(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(depthnet=FACTORY, test_depth=TESTS)
    result = pytester.runpytest_subprocess("--modelprof-update-baselines")
    result.assert_outcomes(passed=1, failed=2)
    result.stdout.fnmatch_lines_random(
        [
            "*grows as layers^1.00 over 1..4, above max_flops_growth=0.5*",
            "*sweep axis 'layers' rebuilds the model*model=*",
        ]
    )
    assert "test_linear_in_depth" not in "".join(
        line for line in result.stdout.lines if line.startswith("FAILED")
    )
