"""Batched and vector products, scatters, index adds and embedding bags against closed forms.

Each module runs one op; the figures are derived in the comments (FLOPs = 2 x MACs plus the
adds the op makes beside its products).
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch
from torch import nn

from pytest_modelprof.profile import profile_model


class One(nn.Module):
    """A module whose forward is ``fn`` of its inputs."""

    def __init__(self, fn: Callable[..., torch.Tensor]) -> None:
        super().__init__()
        self.fn = fn

    def forward(self, *args: torch.Tensor) -> torch.Tensor:
        return self.fn(*args)


def _costs(fn: Callable[..., torch.Tensor], *inputs: torch.Tensor) -> tuple[int, int]:
    p = profile_model(One(fn), inputs=inputs, mode="meta")
    return p.total_macs, p.total_flops


A, B = torch.randn(2, 3, 4), torch.randn(2, 4, 5)  # 2 products of 3x4 @ 4x5: 120 MACs


def test_baddbmm_adds_its_input_once_per_output_unless_beta_is_zero() -> None:
    c = torch.randn(2, 3, 5)
    # 120 MACs, 240 FLOPs, plus 2*3*5 = 30 adds of beta * c.
    assert _costs(torch.baddbmm, c, A, B) == (120, 270)
    assert _costs(lambda c, a, b: torch.baddbmm(c, a, b, beta=0), c, A, B) == (120, 240)


def test_addbmm_also_sums_the_batch_of_products() -> None:
    c = torch.randn(3, 5)
    # 120 MACs, 240 FLOPs; (2 - 1) * 3 * 5 = 15 adds summing the 2 products; 15 bias adds.
    assert _costs(torch.addbmm, c, A, B) == (120, 270)


def test_vector_products() -> None:
    m, v = torch.randn(3, 4), torch.randn(4)
    assert _costs(torch.mv, m, v) == (12, 24)  # 3 rows x 4
    assert _costs(torch.addmv, torch.randn(3), m, v) == (12, 27)  # + 3 bias adds
    assert _costs(torch.dot, torch.randn(6), torch.randn(6)) == (6, 12)


def test_scatter_add_makes_one_add_per_source_element() -> None:
    index = torch.zeros(2, 5, dtype=torch.int64)
    src = torch.randn(2, 5)
    fn = lambda x, i, s: x.scatter_add(0, i, s)  # noqa: E731
    assert _costs(fn, torch.zeros(4, 5), index, src)[1] == 10


@pytest.mark.parametrize(("alpha", "flops"), [(1, 6), (2, 12)])
def test_index_add_scales_the_source_only_when_alpha_is_not_one(alpha: int, flops: int) -> None:
    # 2 rows of 3 added: 6 adds, and 6 multiplies by alpha when alpha != 1.
    fn = lambda x, i, s: x.index_add(0, i, s, alpha=alpha)  # noqa: E731
    index = torch.tensor([0, 3])
    assert _costs(fn, torch.zeros(5, 3), index, torch.randn(2, 3))[1] == flops


@pytest.mark.parametrize(("mode", "flops"), [("sum", 24), ("mean", 32), ("max", 24)])
def test_an_embedding_bag_gathers_each_row_and_a_mean_divides_each_output(
    mode: str, flops: int
) -> None:
    # 2 bags of 3 indices, rows of 4: 24 gathered elements; mean divides 2 x 4 outputs.
    bag = nn.EmbeddingBag(10, 4, mode=mode)
    p = profile_model(bag, inputs=(torch.tensor([[1, 2, 3], [4, 5, 6]]),), mode="meta")
    families = {f.family: f.flops for f in p.op_breakdown}
    assert families["embedding"] == flops
