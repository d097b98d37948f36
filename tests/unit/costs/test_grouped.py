"""Grouped matrix products (MoE experts) and histograms."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from pytest_modelprof.profile import profile_model


class Grouped(nn.Module):
    def __init__(self, offs: list[int] | None) -> None:
        super().__init__()
        self.offs = offs

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        offs = None
        if self.offs is not None:
            offs = torch.tensor(self.offs, dtype=torch.int32, device=a.device)
        return torch._grouped_mm(a, b, offs=offs)


def macs(
    model: nn.Module, *inputs: torch.Tensor, mode: str = "real", dtype: str | None = None
) -> tuple[int, int]:
    p = profile_model(model, inputs=inputs, mode=mode, dtype=dtype)  # type: ignore[arg-type]
    assert p.uncounted_ops == []
    return p.total_macs, p.total_flops


def test_grouped_mm_counts_the_active_tokens_from_real_offsets() -> None:
    # 10 token rows routed to 3 experts (8 -> 4): offsets [2, 5, 7] end the groups, so rows
    # 7..9 belong to no expert. Active: 7 rows x 8 x 4 = 224 MACs (448 FLOPs), not 10 rows.
    a, b = torch.randn(10, 8), torch.randn(3, 8, 4)
    assert macs(Grouped([2, 5, 7]), a, b) == (224, 448)
    # Every row routed: the dense figure, 10 x 8 x 4 = 320.
    assert macs(Grouped([3, 6, 10]), a, b) == (320, 640)


def test_grouped_mm_without_data_is_the_dense_upper_bound() -> None:
    # On meta tensors the offsets have no values: every row counts, 10 x 16 x 8 = 1280 MACs.
    # (bf16 and 16-byte aligned strides: what the meta kernel accepts on every torch.)
    with torch.device("meta"):
        a = torch.empty(10, 16, dtype=torch.bfloat16)
        b = torch.empty(3, 16, 8, dtype=torch.bfloat16)
    assert macs(Grouped([2, 5, 7]), a, b, mode="meta", dtype="bfloat16") == (1280, 2560)
    # float32, which torch 2.14's meta and fake kernels refuse (the CPU kernel takes it): our
    # own shape rule gives the same output in both modes. On meta the offsets have no values
    # (the dense bound); on fake tensors offsets built from constants keep theirs, so the count
    # is the real one: rows 0-1, 2-4 and 5-6 go to the three experts and 7-9 to none,
    # 7 rows x 16 x 8 = 896 MACs.
    with torch.device("meta"):
        a32, b32 = torch.empty(10, 16), torch.empty(3, 16, 8)
    assert macs(Grouped([2, 5, 7]), a32, b32, mode="meta") == (1280, 2560)
    assert macs(Grouped([2, 5, 7]), a32, b32, mode="fake") == (896, 1792)


def test_grouped_mm_batched_and_split_contraction() -> None:
    # 3-D x 3-D is a batched product: 3 x 5 x 8 x 4 = 480 MACs.
    assert macs(Grouped(None), torch.randn(3, 5, 8), torch.randn(3, 8, 4)) == (480, 960)
    # 2-D x 2-D splits the contraction (K = 12) at [4, 9, 12]: 5 x 4 x (4 + 5 + 3) = 240.
    assert macs(Grouped([4, 9, 12]), torch.randn(5, 12), torch.randn(12, 4)) == (240, 480)
    # ... and only the K that the offsets cover: [4, 9] -> 5 x 4 x 9 = 180.
    assert macs(Grouped([4, 9]), torch.randn(5, 12), torch.randn(12, 4)) == (180, 360)


def test_histc() -> None:
    class Hist(nn.Module):
        def __init__(self, lo: float, hi: float) -> None:
            super().__init__()
            self.lo, self.hi = lo, hi

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return torch.histc(x, bins=10, min=self.lo, max=self.hi)

    x = torch.randn(100)
    # Per element: subtract min, scale, two range checks, increment = 5 -> 500.
    assert macs(Hist(-1.0, 1.0), x) == (0, 500)
    # min == max: the data's own min and max are found first (2 more per element) -> 700.
    assert macs(Hist(0.0, 0.0), x) == (0, 700)


def test_mixtral_active_expert_macs_equal_the_closed_form() -> None:
    transformers = pytest.importorskip("transformers")
    cfg = transformers.MixtralConfig(
        num_hidden_layers=2,
        hidden_size=64,
        num_attention_heads=4,
        num_key_value_heads=2,
        intermediate_size=128,
        vocab_size=1000,
        num_local_experts=4,
    )
    model = transformers.MixtralForCausalLM(cfg).eval()
    ids = torch.randint(0, 1000, (1, 16))
    p = profile_model(model, inputs={"input_ids": ids}, mode="real")
    assert p.uncounted_ops == []
    t = 16  # tokens; head_dim 16, kv 2 heads x 16 = 32
    attention = t * (64 * 64 + 2 * 64 * 32 + 64 * 64)  # q, k, v, o projections
    scores = 2 * 4 * t * t * 16  # q @ k^T and p @ v over 4 heads
    router = t * 64 * 4
    experts = t * 2 * 3 * 64 * 128  # top-2 experts per token, gate/up/down of 64 x 128
    lm_head = t * 64 * 1000
    assert p.total_macs == 2 * (attention + scores + router + experts) + lm_head
