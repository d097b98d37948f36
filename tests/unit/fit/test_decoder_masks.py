"""A decoder's estimate takes the attention path its real input takes, byte for byte.

transformers skips the causal mask when it can see the input has no padding (and is not
packed): SDPA then runs with ``is_causal`` and, for grouped-query attention, ``enable_gqa``
instead of expanding K/V with ``repeat_kv``. On tensors without data it cannot look, so the
estimate must be told what the real input is: no mask unless the input has padding.
"""

from __future__ import annotations

import itertools
from typing import Any

import pytest
import torch
from torch import nn

from pytest_modelprof.fit import StepOptions, estimate_memory, measure_step_memory

BATCH, SEQ, VOCAB = 2, 16, 64


def _decoder(family: str, kv_heads: int, attention: str) -> nn.Module:
    import transformers

    config_class, model_class = {
        "llama": (transformers.LlamaConfig, transformers.LlamaForCausalLM),
        "mistral": (transformers.MistralConfig, transformers.MistralForCausalLM),
        "qwen2": (transformers.Qwen2Config, transformers.Qwen2ForCausalLM),
    }[family]
    config = config_class(
        num_hidden_layers=2,
        hidden_size=32,
        intermediate_size=64,
        num_attention_heads=4,
        num_key_value_heads=kv_heads,
        vocab_size=VOCAB,
        max_position_embeddings=64,
        # what a training script sets (and activation checkpointing forces): no KV cache
        use_cache=False,
        attn_implementation=attention,
    )
    return model_class(config)  # type: ignore[no-any-return]


def _inputs(kind: str) -> dict[str, torch.Tensor]:
    ids = torch.randint(0, VOCAB, (BATCH, SEQ))
    if kind == "ids":
        return {"input_ids": ids}
    mask = torch.ones(BATCH, SEQ, dtype=torch.long)  # a tokenizer's mask of an unpadded batch
    if kind == "padded":
        mask[0, 0] = 0  # one left-padded token
    return {"input_ids": ids, "attention_mask": mask}


CASES = list(
    itertools.product(
        ("llama", "mistral", "qwen2"),
        (2, 4),  # KV heads of 4 query heads: grouped-query and multi-head attention
        ("sdpa", "eager"),
        ("fp32", "bf16-mixed"),
        ("ids", "ones", "padded"),
    )
)


@pytest.mark.parametrize(
    ("family", "kv_heads", "attention", "precision", "kind"),
    CASES,
    ids=["-".join(map(str, case)) for case in CASES],
)
def test_decoder_estimate_equals_the_real_step(
    family: str, kv_heads: int, attention: str, precision: str, kind: str
) -> None:
    torch.manual_seed(0)
    model, inputs = _decoder(family, kv_heads, attention), _inputs(kind)
    # no optimizer: the peak is in the forward or the backward, where attention's tensors live
    options = StepOptions(optimizer="none", precision=precision)
    real = measure_step_memory(model, inputs, options=options)
    est = estimate_memory(model, inputs=inputs, options=options)
    assert est.mode == "fake", est.notes
    assert est.breakdown == real.breakdown
    assert est.peak_bytes == real.peak_bytes
    assert est.peak_at == real.peak_at


def _attention_masks(model: nn.Module, inputs: Any, **estimate: Any) -> list[bool]:
    """Whether each SDPA call of the estimate's forward received a mask."""
    seen: list[bool] = []
    sdpa = torch.nn.functional.scaled_dot_product_attention

    def spy(*args: Any, **kwargs: Any) -> Any:
        seen.append(kwargs.get("attn_mask") is not None)
        return sdpa(*args, **kwargs)

    torch.nn.functional.scaled_dot_product_attention = spy
    try:
        estimate_memory(model, inputs=inputs, **estimate)
    finally:
        torch.nn.functional.scaled_dot_product_attention = sdpa
    return seen


def test_no_mask_unless_the_input_has_padding() -> None:
    torch.manual_seed(0)
    model = _decoder("llama", 2, "sdpa")
    options = StepOptions(optimizer="none")
    assert _attention_masks(model, _inputs("ids"), options=options) == [False, False]
    assert _attention_masks(model, _inputs("ones"), options=options) == [False, False]
    assert _attention_masks(model, _inputs("padded"), options=options) == [True, True]


def test_the_estimate_says_it_assumed_no_padding() -> None:
    torch.manual_seed(0)
    model = _decoder("llama", 2, "sdpa")
    options = StepOptions(optimizer="none")
    unpadded = estimate_memory(model, inputs=_inputs("ones"), options=options)
    padded = estimate_memory(model, inputs=_inputs("padded"), options=options)
    assert any(note.startswith("unpadded input") for note in unpadded.notes)
    assert not any(note.startswith("unpadded input") for note in padded.notes)
    assert padded.peak_bytes > unpadded.peak_bytes  # the mask and the masked path's tensors


def test_packed_sequences_take_the_masked_path_on_both() -> None:
    """Two sequences packed in each row (positions restart): transformers builds the
    block-causal mask from the positions, on real tensors and on stand-ins alike."""
    torch.manual_seed(0)
    model = _decoder("llama", 2, "sdpa")
    half = torch.arange(SEQ // 2)
    inputs = {**_inputs("ids"), "position_ids": torch.cat([half, half]).expand(BATCH, -1)}
    options = StepOptions(optimizer="none")
    real = measure_step_memory(model, inputs, options=options)
    est = estimate_memory(model, inputs=inputs, options=options)
    assert est.breakdown == real.breakdown and est.peak_at == real.peak_at
    assert _attention_masks(model, inputs, options=options) == [True, True]
