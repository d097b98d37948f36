"""Cost formulas against hand-derived figures (derivations in the comments)."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from pytest_modelprof.costs import default_registry
from pytest_modelprof.costs.linear_algebra import conv_macs
from pytest_modelprof.costs.registry import CostRegistry, OpCost, TensorMeta
from pytest_modelprof.costs.spatial import adaptive_window_total
from pytest_modelprof.errors import FormulaError
from pytest_modelprof.profile import profile_model


def family_totals(model: nn.Module, *inputs: torch.Tensor) -> dict[str, tuple[int, int]]:
    p = profile_model(model, inputs=inputs, mode="meta")
    return {f.family: (f.flops, f.macs) for f in p.op_breakdown}


def test_conv2d_dense() -> None:
    # out 1x8x16x16 = 2048 elements, each 3 (C_in) * 3*3 taps = 27 MACs -> 55296 MACs;
    # FLOPs 2*55296 + 2048 bias adds = 112640.
    m = nn.Conv2d(3, 8, 3, padding=1)
    p = profile_model(m, input_shape=(1, 3, 16, 16), mode="meta")
    assert (p.total_macs, p.total_flops) == (55296, 112640)


def test_depthwise_and_grouped_conv() -> None:
    # depthwise: 32 groups, weight 32x1x3x3: out 1x32x8x8 = 2048 elements x 9 = 18432 MACs.
    dw = nn.Conv2d(32, 32, 3, padding=1, groups=32, bias=False)
    assert profile_model(dw, input_shape=(1, 32, 8, 8), mode="meta").total_macs == 18432
    # 4 groups, weight 64x8x1x1: out 1x64x8x8 = 4096 elements x 8 = 32768 MACs.
    g = nn.Conv2d(32, 64, 1, groups=4, bias=False)
    assert profile_model(g, input_shape=(1, 32, 8, 8), mode="meta").total_macs == 32768


def test_conv_1d_3d_and_transposed() -> None:
    # conv1d: out 2x4x10 = 80 elements x (2 ch * 3 taps) = 480 MACs.
    c1 = nn.Conv1d(2, 4, 3, padding=1, bias=False)
    assert profile_model(c1, input_shape=(2, 2, 10), mode="meta").total_macs == 480
    # conv3d: out 1x2x4x4x4 = 128 elements x (3 ch * 27 taps) = 10368 MACs.
    c3 = nn.Conv3d(3, 2, 3, padding=1, bias=False)
    assert profile_model(c3, input_shape=(1, 3, 4, 4, 4), mode="meta").total_macs == 10368
    # transposed 2d: each of the 1x4x5x5 = 100 input elements scatters to 6 (C_out) * 2*2 taps
    # = 2400 MACs.
    ct = nn.ConvTranspose2d(4, 6, 2, stride=2, bias=False)
    assert profile_model(ct, input_shape=(1, 4, 5, 5), mode="meta").total_macs == 2400
    assert conv_macs((1, 4, 5, 5), (4, 6, 2, 2), (1, 6, 10, 10), transposed=True) == 2400


def test_linear_and_matmul_family() -> None:
    # Linear 16->32 on 4 rows: addmm 4x16 @ 16x32 = 2048 MACs; FLOPs 4096 + 128 bias adds.
    p = profile_model(nn.Linear(16, 32), input_shape=(4, 16), mode="meta")
    assert (p.total_macs, p.total_flops) == (2048, 4224)

    class Products(nn.Module):
        def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
            # bmm 2x(3x4)@(4x5) = 120 MACs; einsum equals bmm again = 120; matmul 3-D again = 120.
            return torch.bmm(a, b) + torch.einsum("bij,bjk->bik", a, b) + a @ b

    fam = family_totals(Products(), torch.randn(2, 3, 4), torch.randn(2, 4, 5))
    assert fam["matmul"] == (720, 360)


def test_sdpa_counts_attention_even_fused() -> None:
    # q,k,v 1x2x8x4: scores 1*2*8*8 = 128; MACs 128*4 (QK^T) + 128*4 (PV) = 1024.
    q = torch.randn(1, 2, 8, 4)
    reg = default_registry()
    entry = reg.lookup(torch.ops.aten._scaled_dot_product_flash_attention_for_cpu.default)
    assert entry is not None and entry.family == "attention"
    from pytest_modelprof.costs.attention import sdpa_cost

    cost = sdpa_cost(q.shape, q.shape, q.shape)
    # FLOPs = 2*1024 + 128 scores * (5 softmax + 1 scale) = 2816.
    assert cost == OpCost(2816, 1024)

    class Attn(nn.Module):
        def forward(self, q: torch.Tensor) -> torch.Tensor:
            return nn.functional.scaled_dot_product_attention(q, q, q, is_causal=True)

    # Captured through the math path: the same MACs (causal counted dense).
    assert profile_model(Attn(), inputs=(q,), mode="meta").total_macs == 1024


def test_norms_and_activations() -> None:
    x = torch.randn(2, 4, 3, 3)  # 72 elements
    # Inference batch norm: normalise 2 + affine 2 = 4 per element -> 288.
    assert family_totals(nn.BatchNorm2d(4), x)["norm"] == (288, 0)
    # Layer norm with affine: 3 + 2 + 2 = 7 per element -> 504; RMS norm with weight 4 -> 288.
    assert family_totals(nn.LayerNorm([3, 3]), x)["norm"] == (504, 0)
    assert family_totals(nn.GroupNorm(2, 4), x)["norm"] == (504, 0)
    # relu 1, silu 5, hardswish 5, gelu 5 per element.
    assert family_totals(nn.ReLU(), x)["activation"] == (72, 0)
    assert family_totals(nn.SiLU(), x)["activation"] == (360, 0)
    assert family_totals(nn.GELU(), x)["activation"] == (360, 0)


def test_rms_norm() -> None:
    x = torch.randn(2, 8)  # 16 elements, 2 rows
    fam = family_totals(nn.RMSNorm(8), x)
    # On the CPU RMS norm decomposes: pow 16 + mean 16 + add eps 2 + rsqrt 2 + normalise
    # multiply 16 + weight multiply 16 = 68, never uncounted.
    assert "uncounted" not in fam
    assert sum(f for f, _ in fam.values()) == 68
    # The fused kernel (CUDA): square-accumulate 2 + scale 1 + weight 1 = 4 per element = 64.
    entry = default_registry().lookup(torch.ops.aten._fused_rms_norm.default)
    assert entry is not None
    x_meta = TensorMeta((2, 8), "float32", 4)
    w_meta = TensorMeta((8,), "float32", 4)
    assert entry.formula({"input": x_meta, "weight": w_meta}, None) == OpCost(64)


def test_weight_norm() -> None:
    # wav2vec2's positional convolution: weight_norm(conv, dim=2) on an (8, 4, 3) weight.
    conv = nn.utils.parametrizations.weight_norm(nn.Conv1d(4, 8, 3), dim=2)
    fam = family_totals(conv, torch.randn(1, 4, 10))
    assert "uncounted" not in fam
    # v has 96 elements: square-accumulate 2 + scale 1 = 288; g has 3 norms: sqrt + divide = 6.
    entry = default_registry().lookup(torch.ops.aten._weight_norm_interface.default)
    assert entry is not None
    v, g = TensorMeta((8, 4, 3), "float32", 4), TensorMeta((1, 1, 3), "float32", 4)
    assert entry.formula({"v": v, "g": g, "dim": 2}, None) == OpCost(294)


def test_softmax_pool_interp_reduction_embedding() -> None:
    x = torch.randn(1, 2, 4, 4)  # 32 elements
    assert family_totals(nn.Softmax(dim=-1), x)["softmax"] == (160, 0)  # 5 per element
    # max pool 2x2 stride 2: 8 outputs x 4 window = 32 comparisons.
    assert family_totals(nn.MaxPool2d(2), x)["pool"] == (32, 0)
    # adaptive avg to 1x1 is a mean (a reduction): every input accumulated once = 32.
    assert family_totals(nn.AdaptiveAvgPool2d(1), x)["reduction"] == (32, 0)
    # adaptive avg 4x4 -> 2x2: windows of 2 per dim, 2 channels x (2+2) x (2+2) = 32.
    assert family_totals(nn.AdaptiveAvgPool2d(2), x)["pool"] == (32, 0)
    # bilinear x2: 1x2x8x8 = 128 outputs x 7 = 896; nearest is a copy.
    assert family_totals(nn.Upsample(scale_factor=2, mode="bilinear"), x)["interpolate"] == (896, 0)
    assert family_totals(nn.Upsample(scale_factor=2, mode="nearest"), x)["interpolate"] == (0, 0)
    emb = family_totals(nn.Embedding(10, 4), torch.tensor([[1, 2, 3]]))
    assert emb["copy"] == (0, 0) and "uncounted" not in emb


def test_adaptive_windows_overlap() -> None:
    # 5 -> 3: windows [0,2), [1,4), [3,5) -> lengths 2 + 3 + 2 = 7.
    assert adaptive_window_total(5, 3) == 7
    assert adaptive_window_total(8, 1) == 8


def test_grouped_conv_backward_not_multiplied_by_groups() -> None:
    # Depthwise conv fwd 18432 MACs (see above); backward: grad_weight 18432 (input has no grad,
    # so no grad_input) -> fwd + bwd = 2 x forward exactly.
    dw = nn.Conv2d(32, 32, 3, padding=1, groups=32, bias=False)
    p = profile_model(dw, input_shape=(1, 32, 8, 8), mode="meta", include_backward=True)
    assert p.forward_macs == 18432
    assert p.backward_macs == 18432


def test_registry_rejects_duplicates_and_unknown_names() -> None:
    reg = CostRegistry()
    reg.register(torch.ops.aten.mm, family="matmul")(lambda a, out: OpCost(1))
    with pytest.raises(FormulaError, match="already registered"):
        reg.register(torch.ops.aten.mm, family="matmul")(lambda a, out: OpCost(2))
    with pytest.raises(FormulaError, match="qualified"):
        reg.add("mm", lambda a, out: OpCost(0), family="x")


def test_registering_a_family_table_twice_raises() -> None:
    # Every family module goes through the registry's duplicate check: registering one twice
    # into a fresh registry raises (test_registry.py checks that no two tables overlap).
    from pytest_modelprof.costs import FAMILIES

    assert {module.__name__.rsplit(".", 1)[1] for module in FAMILIES} == {
        "attention",
        "linear_algebra",
        "movement",
        "norm",
        "pointwise",
        "recurrent",
        "spatial",
        "vision",
    }
    for module in FAMILIES:
        reg = CostRegistry()
        module.register(reg)
        with pytest.raises(FormulaError, match="already registered"):
            module.register(reg)


def test_default_registry_has_every_core_family() -> None:
    assert {
        "conv",
        "matmul",
        "attention",
        "norm",
        "activation",
        "softmax",
        "pool",
        "interpolate",
        "elementwise",
        "reduction",
        "embedding",
    } <= set(default_registry().families())
