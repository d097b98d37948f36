"""The engine reproduces a LLaMA-style decoder's closed-form cost exactly (toy size, all modes)."""

from __future__ import annotations

import pytest
import torch

from pytest_modelprof.profile import profile_model
from pytest_modelprof.zoo import LLAMA_70B, LlamaConfig, LlamaDecoder, closed_form

TOY = LlamaConfig(vocab=64, dim=32, layers=2, heads=4, kv_heads=2, ffn=48, max_seq=16)


@pytest.mark.parametrize("mode", ["meta", "fake", "real"])
def test_toy_decoder_exact(mode: str) -> None:
    torch.manual_seed(0)
    model = LlamaDecoder(TOY)
    ids = torch.randint(0, TOY.vocab, (2, 12))
    p = profile_model(model, inputs={"input_ids": ids}, mode=mode)  # type: ignore[arg-type]
    expected = closed_form(TOY, tokens=12, batch=2)
    assert p.uncounted_ops == []
    assert (p.total_params, p.total_macs, p.total_flops) == (
        expected["params"],
        expected["macs"],
        expected["flops"],
    )


def test_70b_closed_form_params() -> None:
    # LLaMA-2-70B's published size: 68,976,648,192 parameters (untied embeddings).
    assert closed_form(LLAMA_70B, tokens=2048)["params"] == 68_976_648_192
