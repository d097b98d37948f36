"""Attention: every scaled-dot-product kernel, its backward, and the fused transformer fast paths.

Convention for one attention call with query (B, H, L, E), key (B, H, S, E), value (B, H, S, Ev):
  MACs  = B*H*L*S*E (Q @ K^T)  +  B*H*L*S*Ev (P @ V)
  FLOPs = 2 * MACs + B*H*L*S * (SOFTMAX_FLOPS + 1)   (softmax, plus one scale multiply per score)

NB: causal masking is counted dense. Kernels that skip the masked upper triangle do about half the
matmul work, but which ones do depends on device and version; counting dense keeps the count a
function of shapes alone, identical on every device. The mask add itself is not counted.
"""

from __future__ import annotations

from typing import Any

from pytest_modelprof.costs.norm import LAYER_NORM_FLOPS
from pytest_modelprof.costs.pointwise import ACTIVATION_FLOPS, SOFTMAX_FLOPS
from pytest_modelprof.costs.registry import Args, CostRegistry, OpCost, prod

__all__: list[str] = []


def sdpa_cost(q: tuple[int, ...], k: tuple[int, ...], v: tuple[int, ...]) -> OpCost:
    """Forward cost from query/key/value shapes (leading dims are batch/heads)."""
    *batch, seq_q, dim = q
    seq_k = k[-2]
    dim_v = v[-1]
    bh = prod(batch)
    scores = bh * seq_q * seq_k
    macs = scores * dim + scores * dim_v
    return OpCost(flops=2 * macs + scores * (SOFTMAX_FLOPS + 1), macs=macs)


def _from_args(a: Args) -> OpCost:
    return sdpa_cost(a["query"].shape, a["key"].shape, a["value"].shape)


def sdpa_forward(a: Args, out: Any) -> OpCost:
    return _from_args(a)


def _flash_varlen_shapes(a: Args) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
    # _flash/_efficient_attention_forward take (B, L, H, E): move heads in front of the sequence.
    def bhle(shape: tuple[int, ...]) -> tuple[int, ...]:
        return (shape[0], shape[2], shape[1], shape[3]) if len(shape) == 4 else shape

    return bhle(a["query"].shape), bhle(a["key"].shape), bhle(a["value"].shape)


def flash_forward(a: Args, out: Any) -> OpCost:
    return sdpa_cost(*_flash_varlen_shapes(a))


def sdpa_backward(a: Args, out: Any) -> OpCost:
    """dV = P^T dO, dP = dO V^T, dQ = dS K, dK = dS^T Q: four products of the forward's size.

    NB: flash kernels also recompute Q K^T in backward; that recomputation is an implementation
    detail and is not counted, so the count does not depend on the kernel.
    """
    fwd = _from_args(a)
    macs = 2 * fwd.macs
    scores = fwd.flops - 2 * fwd.macs  # the per-score elementwise work, done again for dS
    return OpCost(flops=2 * macs + scores, macs=macs)


def _linear_macs(tokens: int, weight: Any) -> int:
    return tokens * prod(weight.shape)


def native_mha(a: Args, out: Any) -> OpCost:
    """The nn.MultiheadAttention fast path: in-projection, attention, out-projection, fused."""
    q, k = a["query"], a["key"]
    b, lq, e = q.shape if q.ndim == 3 else (1, *q.shape)
    lk = k.shape[-2]
    heads = int(a["num_head"])
    head_dim = e // heads
    proj = (
        _linear_macs(b * lq, a["qkv_weight"]) // 3 + 2 * _linear_macs(b * lk, a["qkv_weight"]) // 3
    )
    attn = sdpa_cost((b, heads, lq, head_dim), (b, heads, lk, head_dim), (b, heads, lk, head_dim))
    out_proj = _linear_macs(b * lq, a["proj_weight"])
    macs = proj + attn.macs + out_proj
    bias_adds = b * lq * e + 2 * b * lk * e + b * lq * e
    return OpCost(flops=2 * macs + (attn.flops - 2 * attn.macs) + bias_adds, macs=macs)


def transformer_encoder_layer(a: Args, out: Any) -> OpCost:
    """nn.TransformerEncoderLayer's fused fast path: attention, FFN, two norms, activation."""
    src = a["src"]
    b, length, e = src.shape if src.ndim == 3 else (1, *src.shape)
    attn = native_mha(
        {
            "query": src,
            "key": src,
            "num_head": a["num_heads"],
            "qkv_weight": a["qkv_weight"],
            "proj_weight": a["proj_weight"],
        },
        out,
    )
    tokens = b * length
    ffn1 = _linear_macs(tokens, a["ffn_weight_1"])
    ffn2 = _linear_macs(tokens, a["ffn_weight_2"])
    hidden = a["ffn_weight_1"].shape[0]
    act = ACTIVATION_FLOPS["gelu" if a["use_gelu"] else "relu"]
    elementwise = (
        2 * LAYER_NORM_FLOPS * tokens * e  # two layer norms
        + 2 * tokens * e  # two residual adds
        + tokens * hidden  # ffn1 bias
        + tokens * e  # ffn2 bias
        + act * tokens * hidden
    )
    macs = attn.macs + ffn1 + ffn2
    return OpCost(flops=attn.flops + 2 * (ffn1 + ffn2) + elementwise, macs=macs)


def register(reg: CostRegistry) -> None:
    import torch

    aten = torch.ops.aten
    reg.register(
        aten._scaled_dot_product_flash_attention,
        aten._scaled_dot_product_efficient_attention,
        aten._scaled_dot_product_cudnn_attention,
        aten._scaled_dot_product_flash_attention_for_cpu,
        family="attention",
    )(sdpa_forward)
    for name in ("_scaled_dot_product_fused_attention_overrideable",):
        if hasattr(aten, name):
            reg.register(getattr(aten, name), family="attention")(sdpa_forward)
    reg.register(
        aten._flash_attention_forward, aten._efficient_attention_forward, family="attention"
    )(flash_forward)
    reg.register(
        aten._scaled_dot_product_flash_attention_backward,
        aten._scaled_dot_product_efficient_attention_backward,
        aten._scaled_dot_product_cudnn_attention_backward,
        aten._scaled_dot_product_flash_attention_for_cpu_backward,
        family="attention",
    )(sdpa_backward)
    reg.register(aten._native_multi_head_attention, family="attention")(native_mha)
    reg.register(aten._transformer_encoder_layer_fwd, family="attention")(transformer_encoder_layer)
