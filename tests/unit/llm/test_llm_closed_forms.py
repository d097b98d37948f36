"""Decode MACs per token and KV-cache bytes against closed forms written from the config fields.

Each model is built by name (``hf:...``) from a small config on meta tensors. A decode step is
one new token per sequence with ``context - 1`` tokens already cached, so every attention layer
multiplies one query against ``keys`` keys: ``QK^T`` and ``AV`` are ``heads * keys * head_dim``
MACs each (``keys = context`` for global layers; a sliding-window layer keeps ``window - 1``
tokens and attends those plus the new one: ``keys = window``, and the storage its view of
``window - 1`` tokens keeps alive holds ``window``). The LM head is ``d * vocab``.
float32 throughout: 4 bytes a cache element.
"""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("transformers")

from pytest_modelprof.llm import LLMCosts, profile_llm  # noqa: E402

F32 = 4
L = 48  # context after the decode step
P = 16  # prompt


def _llm(name: str, **arch: Any) -> LLMCosts:
    return profile_llm(name, prompt=P, context=L, batch=1, **arch)


def _decoder_arch(d: int, layers: int, heads: int, kv: int, ffn: int, vocab: int) -> dict[str, Any]:
    return dict(
        hidden_size=d,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        num_key_value_heads=kv,
        intermediate_size=ffn,
        vocab_size=vocab,
    )


def test_gpt2_multi_head_attention() -> None:
    d, layers, heads, vocab = 64, 2, 4, 1000
    costs = _llm("hf:gpt2", n_embd=d, n_layer=layers, n_head=heads, vocab_size=vocab)
    # Per layer: c_attn 3d^2, c_proj d^2, MLP 4d^2 + 4d^2; QK^T and AV 2 * d * L (all heads).
    assert costs.decode.macs_per_token == layers * (12 * d * d + 2 * d * L) + d * vocab
    # K and V of every head: 2 * layers * d * L elements.
    assert costs.kv_cache.bytes == 2 * layers * d * L * F32
    assert costs.kv_cache.bytes_per_token == 2 * layers * d * F32


def test_llama_grouped_query_attention() -> None:
    d, layers, heads, kv, ffn, vocab = 128, 2, 8, 2, 256, 1000
    hd = d // heads
    costs = _llm("hf:llama", **_decoder_arch(d, layers, heads, kv, ffn, vocab))
    proj = 2 * d * d + 2 * d * kv * hd  # q and o full width; k and v only kv heads wide
    assert costs.decode.macs_per_token == layers * (proj + 3 * d * ffn + 2 * d * L) + d * vocab
    assert costs.kv_cache.bytes == 2 * layers * kv * hd * L * F32


def test_falcon_multi_query_attention() -> None:
    # Falcon-7B's layout: one K/V head shared by all query heads, parallel attention and MLP.
    d, layers, heads, vocab = 64, 2, 4, 1000
    hd = d // heads
    costs = _llm(
        "hf:falcon",
        hidden_size=d,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        vocab_size=vocab,
        multi_query=True,
        new_decoder_architecture=False,
    )
    # query_key_value: d * (d + 2 hd); dense d^2; MLP d * 4d twice.
    per_layer = d * (d + 2 * hd) + d * d + 8 * d * d + 2 * d * L
    assert costs.decode.macs_per_token == layers * per_layer + d * vocab
    assert costs.kv_cache.bytes == 2 * layers * 1 * hd * L * F32


def test_mistral_sliding_window_beyond_the_window() -> None:
    d, layers, heads, kv, ffn, vocab, window = 128, 2, 8, 2, 256, 1000, 16
    hd = d // heads
    assert L > window
    costs = _llm(
        "hf:mistral", sliding_window=window, **_decoder_arch(d, layers, heads, kv, ffn, vocab)
    )
    proj = 2 * d * d + 2 * d * kv * hd
    assert costs.decode.macs_per_token == layers * (proj + 3 * d * ffn + 2 * d * window) + d * vocab
    # Each layer keeps a view of window - 1 tokens whose storage holds the window tokens the
    # step attended; its window size as an int64 scalar is bookkeeping, not counted.
    assert costs.kv_cache.bytes == layers * 2 * kv * hd * window * F32
    assert costs.kv_cache.growth_per_token == 0  # the window is full: the cache stops growing


def test_gemma2_alternating_local_and_global_layers() -> None:
    d, layers, heads, kv, hd, ffn, vocab, window = 64, 4, 4, 2, 32, 128, 1000, 16
    costs = _llm(
        "hf:gemma2",
        head_dim=hd,
        sliding_window=window,
        **_decoder_arch(d, layers, heads, kv, ffn, vocab),
    )
    local, full = layers // 2, layers // 2  # even layers slide, odd layers attend globally
    proj = 2 * d * heads * hd + 2 * d * kv * hd  # head_dim is its own field: q/o are heads*hd
    attention = local * 2 * heads * hd * window + full * 2 * heads * hd * L
    macs = layers * (proj + 3 * d * ffn) + attention + d * vocab  # LM head tied to embeddings
    assert costs.decode.macs_per_token == macs
    kv_local = local * 2 * kv * hd * window * F32  # the storage behind the window - 1 view
    assert costs.kv_cache.bytes == kv_local + full * 2 * kv * hd * L * F32


def test_mixtral_active_experts_in_flops_all_experts_in_weights() -> None:
    d, layers, heads, kv, ffn, vocab, experts, top_k = 64, 2, 4, 2, 96, 1000, 4, 2
    hd = d // heads
    costs = _llm(
        "hf:mixtral",
        num_local_experts=experts,
        num_experts_per_tok=top_k,
        **_decoder_arch(d, layers, heads, kv, ffn, vocab),
    )
    proj = 2 * d * d + 2 * d * kv * hd
    moe = d * experts + top_k * 3 * d * ffn  # router, then the routed experts only
    assert costs.decode.macs_per_token == layers * (proj + moe + 2 * d * L) + d * vocab
    assert costs.kv_cache.bytes == 2 * layers * kv * hd * L * F32
    attn = 2 * d * d + 2 * d * kv * hd
    per_layer = attn + d * experts + experts * 3 * d * ffn + 2 * d  # + two RMS norms
    params = vocab * d + layers * per_layer + d + d * vocab  # embedding, norm, untied head
    assert costs.weights.bytes == params * F32  # every expert
    # A decode step at batch 1 reads top_k experts per layer and one embedding row.
    unread = layers * (experts - top_k) * 3 * d * ffn + (vocab - 1) * d
    assert costs.weights.active_bytes == (params - unread) * F32


def test_deepseek_v3_multi_head_latent_attention() -> None:
    d, layers, heads, vocab = 64, 2, 4, 1000
    q_lora, kv_lora, rope, nope, v = 48, 32, 8, 16, 16
    ffn, moe_ffn, experts, top_k, shared = 128, 32, 4, 2, 1
    costs = _llm(
        "hf:deepseek_v3",
        hidden_size=d,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        num_key_value_heads=heads,
        vocab_size=vocab,
        q_lora_rank=q_lora,
        kv_lora_rank=kv_lora,
        qk_rope_head_dim=rope,
        qk_nope_head_dim=nope,
        v_head_dim=v,
        intermediate_size=ffn,
        moe_intermediate_size=moe_ffn,
        n_routed_experts=experts,
        num_experts_per_tok=top_k,
        n_shared_experts=shared,
        first_k_dense_replace=1,
        n_group=1,
        topk_group=1,
    )
    # The cache holds the compressed latent and the shared rotary key: kv_lora + rope per token.
    assert costs.kv_cache.bytes == layers * (kv_lora + rope) * L * F32
    attn = (
        d * q_lora
        + q_lora * heads * (nope + rope)  # q_a, q_b
        + d * (kv_lora + rope)  # kv_a (with MQA rotary key)
        + L * kv_lora * heads * (nope + v)  # kv_b expands every cached latent, each step
        + heads * L * (nope + rope)
        + heads * L * v  # QK^T, AV
        + heads * v * d  # o
    )
    dense = 3 * d * ffn  # layer 0 (first_k_dense_replace=1)
    moe = d * experts + (top_k + shared) * 3 * d * moe_ffn
    assert costs.decode.macs_per_token == layers * attn + dense + moe + d * vocab


def test_decode_counts_grow_with_context() -> None:
    arch = _decoder_arch(64, 1, 4, 2, 128, 1000)
    short = profile_llm("hf:llama", prompt=8, context=32, **arch)
    long = profile_llm("hf:llama", prompt=8, context=64, **arch)
    # Only attention grows: QK^T and AV add 2 * d MACs per extra cached token.
    assert long.decode.macs_per_token - short.decode.macs_per_token == 2 * 64 * 32
    assert long.kv_cache.bytes == 2 * short.kv_cache.bytes


def test_a_state_space_model_keeps_a_state_that_does_not_grow() -> None:
    d, layers, state, conv = 64, 2, 16, 4
    costs = _llm(
        "hf:mamba",
        hidden_size=d,
        num_hidden_layers=layers,
        state_size=state,
        conv_kernel=conv,
        vocab_size=1000,
    )
    inner = 2 * d  # expand = 2
    # Per layer a convolution window and an SSM state, whatever the context.
    assert costs.kv_cache.bytes == layers * inner * (conv + state) * F32
    assert costs.kv_cache.growth_per_token == 0
