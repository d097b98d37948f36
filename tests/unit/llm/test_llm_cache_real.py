"""The KV cache measured on meta equals the cache a real prefill + decode step fills on the CPU."""

from __future__ import annotations

from typing import Any

import pytest
import torch

pytest.importorskip("transformers")

from pytest_modelprof.llm import profile_llm  # noqa: E402
from pytest_modelprof.models import resolve  # noqa: E402

SMALL = dict(
    hidden_size=64,
    num_hidden_layers=2,
    num_attention_heads=4,
    num_key_value_heads=2,
    intermediate_size=96,
    vocab_size=500,
)
CASES: dict[str, dict[str, Any]] = {
    "hf:gpt2": dict(n_embd=64, n_layer=2, n_head=4, vocab_size=500),
    "hf:llama": SMALL,
    "hf:mistral": dict(SMALL, sliding_window=8),
    "hf:gemma2": dict(SMALL, sliding_window=8, head_dim=16),
    "hf:deepseek_v3": dict(
        hidden_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=4,
        vocab_size=500,
        q_lora_rank=32,
        kv_lora_rank=16,
        qk_rope_head_dim=8,
        qk_nope_head_dim=8,
        v_head_dim=8,
        intermediate_size=96,
        moe_intermediate_size=32,
        n_routed_experts=4,
        num_experts_per_tok=2,
        first_k_dense_replace=1,
        n_group=1,
        topk_group=1,
    ),
}


def _real_cache_nbytes(name: str, arch: dict[str, Any], context: int, batch: int) -> int:
    """A real CPU prefill of context - 1 tokens and one decode step; nbytes of the cache."""
    torch.manual_seed(0)
    model = resolve(name).build(**arch).eval()
    with torch.no_grad():
        ids = torch.randint(0, 500, (batch, context - 1))
        out = model(input_ids=ids, use_cache=True)
        # transformers >= 5.2x names it ``cache``; earlier releases ``past_key_values``.
        name = "cache" if getattr(out, "cache", None) is not None else "past_key_values"
        cache = getattr(out, name)
        model(input_ids=torch.randint(0, 500, (batch, 1)), use_cache=True, **{name: cache})
    total = 0
    for layer in cache.layers:  # every tensor a cache layer holds: keys, values, window size
        total += sum(v.nbytes for v in vars(layer).values() if isinstance(v, torch.Tensor))
    return total


@pytest.mark.filterwarnings("ignore")
@pytest.mark.parametrize("name", sorted(CASES))
def test_kv_cache_bytes_on_meta_equal_a_real_prefill(name: str) -> None:
    arch = CASES[name]
    context, batch = 20, 2  # beyond the sliding windows of 8
    meta = profile_llm(name, prompt=4, context=context, batch=batch, **arch)
    real = _real_cache_nbytes(name, arch, context, batch)
    assert real > 0
    assert meta.kv_cache.bytes == real
