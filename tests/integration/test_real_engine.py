"""A new user's project with the real engine: missing -> update -> pass -> regress -> fail ->
update; plus the fvcore cross-check. Subprocess runs (see NB)."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.slow

# NB: runpytest_subprocess: pytester's inline runs drop the modules torch imports lazily
# (triton) from sys.modules after each run, and importing those again aborts the process.
PROJECT = """
import pathlib

import pytest
import torch.nn as nn

WIDTH = int(pathlib.Path(__file__).with_name("width.txt").read_text())


@pytest.mark.profile(model="mobilenet_v2", input_shape=(1, 3, 32, 32))
def test_by_name():
    pass


@pytest.mark.profile(max_flops_delta=0.05)
def test_mlp(modelprof):
    mlp = nn.Sequential(nn.Linear(8, WIDTH), nn.ReLU(), nn.Linear(WIDTH, 4))
    assert modelprof(mlp, input_shape=(2, 8)).total_params == 8 * WIDTH + WIDTH + WIDTH * 4 + 4
"""


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["serial", "xdist"])
def test_new_user_flow(pytester: pytest.Pytester, workers: list[str]) -> None:
    pytester.makepyfile(test_models=PROJECT)
    (pytester.path / "width.txt").write_text("16")

    def run(*args: str) -> pytest.RunResult:
        return pytester.runpytest_subprocess(*workers, *args)

    run().assert_outcomes(failed=2)
    run("--modelprof-update-baselines").assert_outcomes(passed=2)
    run().assert_outcomes(passed=2)
    (pytester.path / "width.txt").write_text("32")  # the MLP doubles
    regress = run()
    regress.assert_outcomes(passed=1, failed=1)
    regress.stdout.fnmatch_lines(
        [
            "*modelprof: Sequential in test_models.py::test_mlp regressed against "
            "baselines/test_models/test_mlp.json*",
            "*FLOPs: * \u2192 * (+*%, limit +5.0 %)*",
            "*layers that grew most (FLOPs):*",
        ]
    )
    run("--modelprof-update-baselines").assert_outcomes(passed=2)
    run().assert_outcomes(passed=2)


def test_fvcore_cross_check(pytester: pytest.Pytester) -> None:
    pytest.importorskip("fvcore")
    pytester.makepyfile(
        test_fv="""
        import pytest
        import torch.nn as nn

        @pytest.mark.profile(fvcore=True, max_fvcore_delta=0.05)
        def test_agrees(modelprof):
            modelprof(nn.Sequential(nn.Linear(8, 16), nn.Linear(16, 4)), input_shape=(2, 8))

        @pytest.mark.profile(fvcore=True, max_fvcore_delta=0.0)
        def test_disagrees(modelprof):
            # fvcore counts batch-norm elements as multiply-adds, we do not: never exact
            model = nn.Sequential(nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4)).eval()
            modelprof(model, input_shape=(1, 3, 8, 8))
        """
    )
    result = pytester.runpytest_subprocess("--modelprof-update-baselines", "-p", "no:warnings")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        ["*fvcore cross-check: ours * vs fvcore * (*% apart, max_fvcore_delta=0.0 %)*"]
    )
