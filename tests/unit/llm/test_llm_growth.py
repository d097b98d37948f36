"""Decode FLOPs over a context sweep: linear with a cache, quadratic when the prefix is redone."""

from __future__ import annotations

from typing import Any

import pytest
import torch
from torch import nn

from pytest_modelprof.baseline.collector import Measure
from pytest_modelprof.gate.limits import Limits
from pytest_modelprof.gate.request import ProfileRequest
from pytest_modelprof.llm.gate import LLM_COLLECTOR as LLM
from pytest_modelprof.llm.growth import decode_growth, fit_exponent

CONTEXTS = (16, 32, 64, 128)


class CachedDecoder(nn.Module):
    """One attention layer over a tuple cache: a decode step reads the cache once."""

    def __init__(self, d: int = 32, vocab: int = 100) -> None:
        super().__init__()
        self.embed = nn.Embedding(vocab, d)
        self.qkv = nn.Linear(d, 3 * d, bias=False)
        self.head = nn.Linear(d, vocab, bias=False)

    def attend(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        return torch.softmax(q @ k.transpose(1, 2), dim=-1) @ v

    def forward(self, input_ids: torch.Tensor, past_key_values: Any = None) -> Any:
        q, k, v = self.qkv(self.embed(input_ids)).chunk(3, dim=-1)
        if past_key_values is not None:
            k = torch.cat([past_key_values[0], k], dim=1)
            v = torch.cat([past_key_values[1], v], dim=1)
        return self.head(self.attend(q, k, v)), (k, v)


class PrefixRedone(CachedDecoder):
    """The slip: every step attends all cached tokens to each other (L^2 per step)."""

    def attend(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        mixed = torch.softmax(k @ k.transpose(1, 2), dim=-1) @ v  # (L, L) scores each step
        return super().attend(q, k, mixed)


def test_the_fit_recovers_a_power() -> None:
    assert fit_exponent([1, 2, 4, 8], [3, 12, 48, 192]) == pytest.approx(2.0)


def test_a_cache_keeps_decode_linear_and_a_redone_prefix_is_quadratic() -> None:
    linear = decode_growth(CachedDecoder(), CONTEXTS, prompt=4)["growth"]
    quadratic = decode_growth(PrefixRedone(), CONTEXTS, prompt=4)["growth"]
    # Cached: qkv and head fixed, QK^T and AV 2 * 32 MACs per cached token: below 1.
    assert linear["decode_flops_exponent"] < 1.0
    assert quadratic["decode_flops_exponent"] > 1.5
    assert linear["kv_cache"] == [2 * 32 * c * 4 for c in CONTEXTS]
    assert linear["kv_cache_exponent"] == pytest.approx(1.0)


def test_the_gate_collector_gives_the_exponent_only_for_a_context_sweep() -> None:
    sweep = ProfileRequest(PrefixRedone(), llm=(("context", CONTEXTS), ("prompt", 4)))
    evidence = LLM.measure(Measure(sweep, Limits()))
    assert evidence is not None and evidence["context"] == CONTEXTS[-1]
    values = LLM.values(evidence)
    assert values["decode_flops_growth"] > 1.5
    assert values["kv_cache"] == 2 * 32 * CONTEXTS[-1] * 4
    single = ProfileRequest(PrefixRedone(), llm=(("context", 16), ("prompt", 4)))
    evidence = LLM.measure(Measure(single, Limits()))
    assert evidence is not None
    assert "decode_flops_growth" not in LLM.values(evidence)
