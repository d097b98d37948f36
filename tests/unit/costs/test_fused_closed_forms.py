"""Formulas of kernels a CPU capture never reaches (CUDA attention, cuDNN RNN, torchvision's
detection ops), against closed forms worked out by hand. Each is called through the registry
with shapes only, and the arguments it reads must be named in the op's own schema."""

from __future__ import annotations

from typing import Any

import pytest
import torch
import torchvision  # noqa: F401  (registers the torchvision:: ops, so their schemas exist)

from pytest_modelprof._compat import op_schema
from pytest_modelprof.costs import default_registry
from pytest_modelprof.costs.registry import OpCost, TensorMeta

aten = torch.ops.aten


def t(*shape: int) -> TensorMeta:
    return TensorMeta(shape, "float32", 4)


def cost(op: Any, out: Any = None, **args: Any) -> OpCost:
    """``op``'s formula on ``args``, once each argument is known to be one of the op's."""
    entry = default_registry().lookup(op)
    assert entry is not None, f"{op} has no formula"
    names = {a.name for a in op_schema(op).arguments}
    assert set(args) <= names, f"{op} takes no {sorted(set(args) - names)}"
    return entry.formula(args, out)


# q (B=2, H=3, L=5, E=4), k (2, 3, S=7, 4), v (2, 3, 7, Ev=6): B*H*L*S = 210 scores.
# MACs = 210*4 (Q K^T) + 210*6 (P V) = 2100; FLOPs = 2*2100 + 210*(5 softmax + 1 scale) = 5460.
Q, K, V = t(2, 3, 5, 4), t(2, 3, 7, 4), t(2, 3, 7, 6)
SDPA = OpCost(flops=5460, macs=2100)


@pytest.mark.parametrize(
    "op",
    [
        aten._scaled_dot_product_flash_attention.default,
        aten._scaled_dot_product_efficient_attention.default,
        aten._scaled_dot_product_cudnn_attention.default,
        aten._scaled_dot_product_flash_attention_for_cpu.default,
    ],
    ids=lambda op: str(op).split(".")[1],
)
def test_fused_sdpa_forward(op: Any) -> None:
    assert cost(op, query=Q, key=K, value=V) == SDPA


@pytest.mark.parametrize(
    "op", [aten._flash_attention_forward.default, aten._efficient_attention_forward.default]
)
def test_flash_and_efficient_kernels_take_heads_after_the_sequence(op: Any) -> None:
    # The same attention laid out (B, L, H, E): the same 5460 FLOPs, 2100 MACs.
    q, k, v = t(2, 5, 3, 4), t(2, 7, 3, 4), t(2, 7, 3, 6)
    assert cost(op, query=q, key=k, value=v) == SDPA


@pytest.mark.parametrize(
    "op",
    [
        aten._scaled_dot_product_flash_attention_backward.default,
        aten._scaled_dot_product_efficient_attention_backward.default,
        aten._scaled_dot_product_cudnn_attention_backward.default,
        aten._scaled_dot_product_flash_attention_for_cpu_backward.default,
    ],
    ids=lambda op: str(op).split(".")[1],
)
def test_fused_sdpa_backward(op: Any) -> None:
    # dV, dP, dQ, dK: four products of the forward's 1050 MACs each = 4200 MACs; FLOPs
    # 2*4200 + the 210 scores' 6 elementwise FLOPs again for dS (1260) = 9660.
    assert cost(op, query=Q, key=K, value=V) == OpCost(flops=9660, macs=4200)


def test_native_multi_head_attention() -> None:
    # query (B=2, L=5, E=8), key/value (2, S=7, 8), 2 heads of 4.
    # In-projection: q 10 tokens * 8*8 = 640, k and v 14 tokens * 64 each = 1792; out 640.
    # Attention (2, 2, 5, 4) x (2, 2, 7, 4): 140 scores, 140*4 + 140*4 = 1120 MACs.
    # MACs 640 + 1792 + 1120 + 640 = 4192; FLOPs 2*4192 + 140*6 scores + bias adds
    # (q 80 + k 112 + v 112 + out 80 = 384) = 9608.
    got = cost(
        aten._native_multi_head_attention.default,
        query=t(2, 5, 8),
        key=t(2, 7, 8),
        value=t(2, 7, 8),
        num_head=2,
        qkv_weight=t(24, 8),
        proj_weight=t(8, 8),
    )
    assert got == OpCost(flops=9608, macs=4192)


@pytest.mark.parametrize(("use_gelu", "flops"), [(False, 14440), (True, 15080)])
def test_fused_transformer_encoder_layer(use_gelu: bool, flops: int) -> None:
    # src (2, 5, 8), 2 heads, FFN 8 -> 16 -> 8; 10 tokens.
    # Self-attention: in-projection 3 * 640 = 1920, 100 scores * (4 + 4) = 800, out 640:
    # 3360 MACs, 2*3360 + 100*6 + bias adds 4*80 = 7640 FLOPs.
    # FFN: 10 * 128 twice = 2560 MACs, 5120 FLOPs.
    # Elementwise: two layer norms 2*7*80 = 1120, two residual adds 160, biases 160 + 80,
    # activation 160 units * (relu 1 | gelu 5) = 160 | 800: 1680 | 2320.
    # MACs 3360 + 2560 = 5920; FLOPs 7640 + 5120 + 1680 = 14440 | + 2320 = 15080.
    got = cost(
        aten._transformer_encoder_layer_fwd.default,
        src=t(2, 5, 8),
        num_heads=2,
        qkv_weight=t(24, 8),
        proj_weight=t(8, 8),
        use_gelu=use_gelu,
        ffn_weight_1=t(16, 8),
        ffn_weight_2=t(8, 16),
    )
    assert got == OpCost(flops=flops, macs=5920)


def _lstm_weights(input_size: int, hidden: int, layers: int, directions: int) -> list[TensorMeta]:
    """w_ih, w_hh, b_ih, b_hh per layer and direction, as nn.LSTM passes them."""
    out: list[TensorMeta] = []
    for layer in range(layers):
        width = input_size if layer == 0 else hidden * directions
        for _ in range(directions):
            out += [t(4 * hidden, width), t(4 * hidden, hidden), t(4 * hidden), t(4 * hidden)]
    return out


@pytest.mark.parametrize(("biases", "flops"), [(True, 10944), (False, 10176)])
def test_cudnn_lstm(biases: bool, flops: int) -> None:
    # input (T=3, B=2, I=5), hidden 4, 2 layers, bidirectional: 6 rows, 4 gates.
    # Layer 1: 6 * 16 * (5 + 4) * 2 directions = 1728 MACs; layer 2 reads both directions
    # (8 wide): 6 * 16 * (8 + 4) * 2 = 2304 MACs; 4032 in all.
    # Pointwise per layer: 6 rows * 4 units * 2 directions * 30 = 1440 (22 without the 8 bias
    # adds: 1056). FLOPs 2*4032 + 2*1440 = 10944, or 2*4032 + 2*1056 = 10176.
    weights = _lstm_weights(5, 4, 2, 2)
    if not biases:
        weights = [w for w in weights if w.ndim == 2]
    args = {"input": t(3, 2, 5), "hidden_size": 4, "num_layers": 2, "bidirectional": True}
    got = cost(aten._cudnn_rnn.default, weight=weights, mode=2, **args)
    assert got == OpCost(flops=flops, macs=4032)
    # The one-op aten.lstm of the same module (what a meta capture prices) agrees.
    same = cost(
        aten.lstm.input,
        input=t(3, 2, 5),
        params=weights,
        has_biases=biases,
        num_layers=2,
        bidirectional=True,
    )
    assert same == got


def test_cudnn_gru_on_a_packed_sequence() -> None:
    # A packed input is 2-D, one row per (step, sequence): 7 rows, I=5, hidden 4, 3 gates.
    # MACs 7 * 12 * (5 + 4) = 756; FLOPs 2*756 + 7 * 4 * 22 = 2128.
    weights = [t(12, 5), t(12, 4), t(12), t(12)]
    got = cost(
        aten._cudnn_rnn.default,
        input=t(7, 5),
        weight=weights,
        mode=3,
        hidden_size=4,
        num_layers=1,
        bidirectional=False,
    )
    assert got == OpCost(flops=2128, macs=756)


def test_nms_compares_every_pair_once() -> None:
    # 10 boxes: 45 pairs * 10 FLOPs per IoU = 450.
    got = cost(torch.ops.torchvision.nms.default, dets=t(10, 4), scores=t(10), iou_threshold=0.5)
    assert got == OpCost(450)


@pytest.mark.parametrize(("ratio", "flops"), [(2, 1536), (0, 1536), (3, 3456)])
@pytest.mark.parametrize("name", ["roi_align", "ps_roi_align"])
def test_roi_align_samples_each_output_bin(name: str, ratio: int, flops: int) -> None:
    # 3 boxes * 4 channels * 2x2 bins = 48 outputs; each takes ratio^2 bilinear samples of
    # 7 + 1 accumulate: 2x2 -> 48 * 4 * 8 = 1536; ratio 0 (adaptive) assumes 2x2; 3x3 -> 3456.
    op = getattr(torch.ops.torchvision, name).default
    out = t(3, 4, 2, 2)
    outs = (out, t(3, 4, 2, 2)) if name == "ps_roi_align" else out  # ps_ also returns channels
    got = cost(op, outs, input=t(1, 16, 8, 8), rois=t(3, 5), sampling_ratio=ratio)
    assert got == OpCost(flops)


@pytest.mark.parametrize("name", ["roi_pool", "ps_roi_pool"])
def test_roi_pool_takes_one_max_per_output(name: str) -> None:
    # 48 outputs (3 boxes * 4 channels * 2x2): one FLOP each, the argmax tensor is not counted.
    op = getattr(torch.ops.torchvision, name).default
    got = cost(op, (t(3, 4, 2, 2), t(3, 4, 2, 2)), input=t(1, 16, 8, 8), rois=t(3, 5))
    assert got == OpCost(48)
