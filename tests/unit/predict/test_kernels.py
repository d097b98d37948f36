"""The kernels a capture stands for: classes, GEMM shapes, and bytes under each precision."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from pytest_modelprof.predict.kernels import Kernel, eager_kernels, site_texts
from pytest_modelprof.profile import profile_with_capture


def _kernels(model: nn.Module, shape: tuple[int, ...], precision: str) -> list[Kernel]:
    capture = profile_with_capture(model, input_shape=shape, mode="meta").capture
    assert capture is not None
    return eager_kernels(capture.ops, site_texts(capture.sites), precision)


def test_a_linear_layer_is_one_matmul_with_its_bytes_at_fp32() -> None:
    (k,) = _kernels(nn.Linear(64, 32), (8, 64), "fp32")
    assert (k.cls, k.gemm_k, k.gemm_n) == ("matmul", 64, 32)
    # reads x 8*64*4 = 2048, W 64*32*4 = 8192, bias 32*4 = 128; writes 8*32*4 = 1024
    assert k.bytes == 2048 + 8192 + 128 + 1024
    # 2 FLOPs per multiply-add: 2*8*64*32 = 32768 (and the bias adds 8*32 = 256 at most)
    assert 32768 <= k.flops <= 32768 + 256


def test_autocast_casts_every_fp32_operand_and_halves_the_matmul() -> None:
    kernels = _kernels(nn.Linear(64, 32), (8, 64), "amp")
    casts = sorted(k.bytes for k in kernels if k.op == "autocast cast")
    # each cast reads 4 and writes 2 bytes per element: bias 32*6, x 512*6, W 2048*6
    assert casts == [192, 3072, 12288]
    (mm,) = [k for k in kernels if k.cls == "matmul"]
    assert mm.bytes == (2048 + 8192 + 128 + 1024) / 2


def test_a_norm_after_an_fp16_matmul_runs_in_fp32_under_autocast() -> None:
    model = nn.Sequential(nn.Linear(16, 16, bias=False), nn.LayerNorm(16))
    kernels = _kernels(model, (4, 16), "amp")
    norm = next(k for k in kernels if k.cls == "norm")
    up = [k for k in kernels if k.op == "autocast cast" and k.module == "1"]
    # the fp16 output (4*16 elements) is cast up: 64 * (2 + 4) bytes
    assert [k.bytes for k in up] == [64 * 6]
    # the norm then reads x (64*4) and its fp32 weight and bias (16*4 each), writes 64*4
    assert norm.bytes >= 64 * 4 * 2


def test_convolutions_are_dense_grouped_or_depthwise_with_their_gemm_shape() -> None:
    model = nn.Sequential(
        nn.Conv2d(16, 32, 3, padding=1),  # dense: K = 16*3*3 = 144, N = 32
        nn.Conv2d(32, 32, 3, padding=1, groups=4),  # grouped: K = 8*9 = 72, N = 8
        nn.Conv2d(32, 32, 3, padding=1, groups=32),  # depthwise: K = 9, N = 1
    )
    convs = [(k.cls, k.gemm_k, k.gemm_n) for k in _kernels(model, (1, 16, 8, 8), "fp32")]
    assert convs == [("conv", 144, 32), ("conv_grouped", 72, 8), ("conv_depthwise", 9, 1)]


class _Attention(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        q = k = v = x.view(2, 4, 16, 8)  # (batch, heads, tokens, head dim)
        return F.scaled_dot_product_attention(q, k, v)


def test_scaled_dot_product_attention_is_one_fused_kernel() -> None:
    kernels = _kernels(_Attention(), (2, 4, 16, 8), "fp16")
    (att,) = [k for k in kernels if k.cls == "attention"]
    assert not [k for k in kernels if k.cls in ("matmul", "reduction")]
    # q, k and v read once (3 * 1024 elements) and the output written once, 2 bytes each
    assert att.bytes == 4 * 1024 * 2
    # Q K^T and P V: 2 * (2*4*16*16*8) multiply-adds, 2 FLOPs each, plus the softmax
    assert att.flops >= 4 * 2 * 4 * 16 * 16 * 8


def test_fused_mode_launches_fewer_kernels_that_move_fewer_bytes() -> None:
    from pytest_modelprof.predict.kernels import fused_kernels

    model = nn.Sequential(nn.Conv2d(8, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU()).eval()
    capture = profile_with_capture(model, input_shape=(2, 8, 16, 16), mode="meta").capture
    assert capture is not None
    eager = eager_kernels(capture.ops, site_texts(capture.sites), "fp32")
    fused = fused_kernels(capture, "fp32")
    # conv, batch norm and relu are three eager kernels; fused, the norm and relu ride along
    assert [k.cls for k in eager] == ["conv", "norm", "elementwise"]
    assert len(fused) < len(eager)
    assert sum(k.bytes for k in fused) < sum(k.bytes for k in eager)
    assert sum(k.flops for k in fused) == sum(k.flops for k in eager)
