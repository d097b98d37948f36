"""The KV cache measured on meta equals what a real prefill + decode steps keep alive on the CPU."""

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
    # Multi-query attention: one K/V head shared by every query head.
    "hf:falcon": dict(
        hidden_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        vocab_size=500,
        multi_query=True,
        new_decoder_architecture=False,
    ),
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


def _held_storage_bytes(cache: Any) -> int:
    """Bytes of the storages behind the keys and values a cache's layers hold, each storage once.

    A sliding-window layer keeps a view of its last window - 1 tokens whose storage still holds
    window tokens: the storage is what stays alive. Zero-dimensional tensors (a layer's window
    size as an int64 scalar) are bookkeeping, not keys or values.
    """
    storages: dict[int, int] = {}
    for layer in cache.layers:
        for value in vars(layer).values():
            if isinstance(value, torch.Tensor) and value.dim() > 0:
                storage = value.untyped_storage()
                storages[storage.data_ptr()] = storage.nbytes()
    return sum(storages.values())


def _real_cache_nbytes(
    name: str, arch: dict[str, Any], context: int, batch: int
) -> tuple[int, int]:
    """A real CPU prefill of context - 2 tokens, then two decode steps: the bytes the cache
    keeps alive after the step to context - 1 and after the step to context."""
    torch.manual_seed(0)
    model = resolve(name).build(**arch).eval()
    held = []
    with torch.no_grad():
        out = model(input_ids=torch.randint(0, 500, (batch, context - 2)), use_cache=True)
        # transformers >= 5.2x names it ``cache``; earlier releases ``past_key_values``.
        arg = "cache" if getattr(out, "cache", None) is not None else "past_key_values"
        cache = getattr(out, arg)
        for _ in range(2):
            ids = torch.randint(0, 500, (batch, 1))
            cache = getattr(model(input_ids=ids, use_cache=True, **{arg: cache}), arg)
            held.append(_held_storage_bytes(cache))
    return held[0], held[1]


@pytest.mark.filterwarnings("ignore")
@pytest.mark.parametrize("name", sorted(CASES))
def test_kv_cache_bytes_on_meta_equal_the_storage_a_real_cache_keeps(name: str) -> None:
    arch = CASES[name]
    context, batch = 20, 2  # beyond the sliding windows of 8
    meta = profile_llm(name, prompt=4, context=context, batch=batch, **arch)
    before, after = _real_cache_nbytes(name, arch, context, batch)
    assert after > 0
    assert meta.kv_cache.bytes == after
    assert meta.kv_cache.growth_per_token == (after - before) / batch
