"""The fvcore cross-check: same module, same input, fvcore's one-per-multiply-add vs our MACs."""

from __future__ import annotations

import sys

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from pytest_modelprof.cli import main
from pytest_modelprof.errors import ModelprofError
from pytest_modelprof.runtime.fvcore import FvcoreComparison, compare_with_fvcore

pytest.importorskip("fvcore")

SHAPE = (1, 3, 64, 64)


@pytest.fixture(scope="module")
def resnet18() -> FvcoreComparison:
    return compare_with_fvcore("resnet18", SHAPE)


def test_resnet18_agrees_within_2_percent(resnet18: FvcoreComparison) -> None:
    assert resnet18.model == "resnet18"
    assert resnet18.input_shape == SHAPE
    assert resnet18.agreement >= 0.98
    assert resnet18.within(0.02)


def test_resnet18_difference_is_exactly_what_fvcore_adds(resnet18: FvcoreComparison) -> None:
    by_op = resnet18.fvcore_by_operator
    # Convolutions and the classifier: the same multiply-adds on both sides, to the unit.
    assert by_op["conv"] + by_op["linear"] == resnet18.ours_macs
    # fvcore also charges batch norm 2 per element (affine, eval). At 64x64 the 20 BN layers
    # see 64*32*32 + 4*64*16*16 + 5*128*8*8 + 5*256*4*4 + 5*512*2*2 = 202_752 elements.
    assert by_op["batch_norm"] == 2 * 202_752
    # ... and the adaptive average pool 1 per input element: 512*2*2.
    assert by_op["adaptive_avg_pool2d"] == 2_048
    assert resnet18.fvcore_macs - resnet18.ours_macs == 2 * 202_752 + 2_048


def test_ops_fvcore_skips_are_listed(resnet18: FvcoreComparison) -> None:
    # fvcore has no handle for max pooling or the residual in-place adds (8 basic blocks).
    assert resnet18.unsupported_ops == {"aten::add_": 8, "aten::max_pool2d": 1}
    assert resnet18.ours_uncounted == {}


class _Attention(nn.Module):
    """q/k/v projections and fused attention, which fvcore's JIT handles do not know."""

    def __init__(self, dim: int = 32) -> None:
        super().__init__()
        self.qkv = nn.Linear(dim, 3 * dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        q, k, v = self.qkv(x).unflatten(-1, (3, 1, -1)).permute(2, 0, 3, 1, 4)
        return F.scaled_dot_product_attention(q, k, v)


def test_module_with_attention_fvcore_misses_the_attention_matmuls() -> None:
    c = compare_with_fvcore(_Attention(), (2, 10, 32))
    assert c.model == "_Attention" and c.input_shape == (2, 10, 32)
    assert c.unsupported_ops["aten::scaled_dot_product_attention"] == 1
    # fvcore: the projection only, 2*10 tokens * 32 * 96 = 61_440.
    assert c.fvcore_macs == 61_440
    # Ours adds Q K^T and A V: 2 * (2 batches * 10 * 10 * 32) = 12_800 (the softmax scaling
    # and exp are FLOPs, not multiply-adds).
    assert c.ours_macs == 61_440 + 12_800
    assert not c.within(0.05)


def test_missing_fvcore_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "fvcore.nn", None)  # makes `import fvcore.nn` fail
    with pytest.raises(ModelprofError, match=r"pip install 'pytest-modelprof\[fvcore\]'"):
        compare_with_fvcore(nn.Linear(4, 4), (1, 4))


def test_cli_tolerance_decides_the_exit_code(capsys: pytest.CaptureFixture[str]) -> None:
    shape = ",".join(map(str, SHAPE))
    assert main(["fvcore", "--models", "resnet18", "--input-shape", shape]) == 0
    out = capsys.readouterr().out
    row = next(line for line in out.splitlines() if line.startswith("  resnet18"))
    assert row.rstrip().endswith("ok")
    assert "aten::max_pool2d x1" in out  # the skipped ops are shown
    # A zero tolerance fails: fvcore also counts batch norm, so the totals cannot be equal.
    assert main(["fvcore", "resnet18", "--input-shape", shape, "--tolerance", "0"]) == 1
    out = capsys.readouterr().out
    assert "OVER" in out


def test_cli_progress_goes_to_stderr(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["fvcore", "--models", "resnet18,squeezenet1_1", "--input-shape", "1,3,32,32",
                 "--tolerance", "10%"])
    captured = capsys.readouterr()
    assert "[1/2] resnet18 ..." in captured.err and "[2/2] squeezenet1_1 ..." in captured.err
    assert "[1/2]" not in captured.out
    assert code == 0, captured.out
    assert max(len(line) for line in captured.out.splitlines()) <= 100


def test_cli_unknown_model_fails_before_any_work(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["fvcore", "--models", "resnet18,resnet_does_not_exist"]) == 2
    captured = capsys.readouterr()
    assert "resnet_does_not_exist" in captured.err
    assert "[1/2]" not in captured.err
