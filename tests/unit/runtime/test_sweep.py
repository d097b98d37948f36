"""Scaling sweeps: exponents on toy models, and the gate that catches a quadratic blow-up."""

from __future__ import annotations

import math
import re

import pytest
import torch
from torch import nn

from pytest_modelprof.report.sweep_text import format_sweep
from pytest_modelprof.runtime.growth_fit import fit_growth
from pytest_modelprof.runtime.sweep import sweep
from pytest_modelprof.runtime.sweep_result import check_growth


class Scores(nn.Module):
    """The L x L part of attention: softmax(q k^T) v, no projections."""

    def forward(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        weights = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1]), dim=-1)
        out: torch.Tensor = weights @ v
        return out


class ToyAttention(nn.Module):
    """Projections (linear in L) around the scores (quadratic in L)."""

    def __init__(self, dim: int = 16) -> None:
        super().__init__()
        self.qkv = nn.Linear(dim, 3 * dim)
        self.attn = Scores()
        self.out = nn.Linear(dim, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        y: torch.Tensor = self.out(self.attn(q, k, v))
        return y


class TokenMLP(nn.Module):
    """Per-token MLP: linear in L. ``blow_up`` adds an L x L product (the injected bug)."""

    def __init__(self, dim: int = 16, blow_up: bool = False) -> None:
        super().__init__()
        self.mlp = nn.Sequential(nn.Linear(dim, 4 * dim), nn.ReLU(), nn.Linear(4 * dim, dim))
        self.blow_up = blow_up

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y: torch.Tensor = self.mlp(x)
        if self.blow_up:
            y = (y @ y.transpose(-2, -1)).softmax(-1) @ y
        return y


SEQ = [32, 64, 128, 256]


def test_fit_growth_recovers_known_powers() -> None:
    xs = [1, 2, 4, 8]
    assert fit_growth(xs, [3 * x for x in xs]).exponent == pytest.approx(1.0)
    fit = fit_growth(xs, [5 * x * x for x in xs])
    assert fit.exponent == pytest.approx(2.0) and fit.r2 == pytest.approx(1.0)
    assert math.exp(fit.intercept) == pytest.approx(5.0)
    # a + b x^2 mixes: the overall slope is between 1 and 2, the tail slope closer to 2
    mixed = fit_growth(xs, [100 * x + x * x for x in xs])
    assert mixed.tail_exponent is not None and 1.0 < mixed.exponent < mixed.tail_exponent < 2.0
    with pytest.raises(ValueError, match="2 points"):
        fit_growth([1, 2], [0, 5])


def test_attention_scores_grow_quadratically_in_seq_len() -> None:
    result = sweep(ToyAttention(), over={"seq_len": SEQ}, input_shape=(1, 32, 16), latency=False)
    series = result.series_for("seq_len")
    assert [p.input_shapes for p in series.points] == [[[1, n, 16]] for n in SEQ]
    # Scores: q k^T and weights v are each 2 * L * L * 16 FLOPs -> exactly L^2
    assert series.module_fits["attn"].exponent == pytest.approx(2.0, abs=0.02)
    assert series.module_fits["qkv"].exponent == pytest.approx(1.0, abs=1e-6)
    total = series.fits["flops"]
    assert 1.0 < total.exponent < 2.0
    assert series.fits["peak_activation_bytes"].exponent > 1.5  # the L x L score matrix


def test_linear_model_grows_linearly_in_batch_and_seq_len() -> None:
    result = sweep(TokenMLP(), over={"batch": [1, 4, 16], "seq_len": SEQ},
                   input_shape=(1, 32, 16), latency=False)
    assert result.exponent("batch") == pytest.approx(1.0, abs=1e-6)
    assert result.exponent("seq_len") == pytest.approx(1.0, abs=1e-6)
    assert result.base == {"batch": 1, "seq_len": 32}
    assert check_growth(result, {"max_flops_growth": 1.1}) == []


def test_growth_gate_catches_an_injected_quadratic_blow_up() -> None:
    before = sweep(TokenMLP(), over={"seq_len": SEQ}, input_shape=(1, 32, 16), latency=False)
    after = sweep(TokenMLP(blow_up=True), over={"seq_len": SEQ}, input_shape=(1, 32, 16),
                  latency=False)
    limits = {"max_flops_growth": 1.1}
    assert check_growth(before, limits) == []
    violations = check_growth(after, limits)
    assert len(violations) == 1
    v = violations[0]
    assert v.axis == "seq_len" and v.metric == "flops" and v.exponent > 1.2
    assert "max_flops_growth=1.1" in v.message and "(model)" in v.message
    with pytest.raises(ValueError, match="unknown growth limit"):
        check_growth(after, {"max_flop_growth": 1.0})


def test_factory_axes_and_latency() -> None:
    def deep(layers: int) -> nn.Module:
        return nn.Sequential(*[nn.Linear(8, 8) for _ in range(layers)])

    result = sweep(deep, over={"layers": [1, 2, 4]}, input_shape=(2, 8), rounds=2, warmup=0)
    series = result.series_for("layers")
    assert series.fits["flops"].exponent == pytest.approx(1.0, abs=1e-6)
    assert [p.params for p in series.points] == [72, 144, 288]  # 8*8 + 8 per layer
    assert all(p.latency is not None and p.latency.rounds == 2 for p in series.points)
    assert "layers" in format_sweep(result)
    with pytest.raises(ValueError, match="factory"):
        sweep(deep(1), over={"layers": [1, 2]}, input_shape=(2, 8))


def test_input_size_and_integer_inputs() -> None:
    conv = nn.Conv2d(3, 4, 3, padding=1)
    result = sweep(conv, over={"input_size": [8, 16, 32]}, input_shape=(1, 3, 8, 8),
                   latency=False)
    assert result.exponent("input_size") == pytest.approx(2.0, abs=1e-6)  # H x W

    emb = nn.Embedding(100, 8)
    tokens = torch.randint(0, 100, (2, 10))
    result = sweep(emb, over={"seq_len": [10, 20, 40]}, inputs=tokens, latency=False)
    shapes = [p.input_shapes[0] for p in result.series_for("seq_len").points]
    assert shapes == [[2, 10], [2, 20], [2, 40]]
    assert result.exponent("seq_len", "peak_activation_bytes") == pytest.approx(1.0, abs=1e-6)


def test_the_sweep_text_fits_100_columns_with_units_and_explains_a_fixed_part() -> None:
    # Seen before: "13.6 G" without a unit, a 174-column growth line, and "flops ^0.43" for a
    # model linear in its layers plus a fixed head read as sub-linear.
    told: list[str] = []
    result = sweep(
        lambda layers: nn.Sequential(
            nn.Linear(64, 256), *[nn.Linear(256, 256) for _ in range(layers)], nn.Linear(256, 8)
        ),
        over={"layers": [1, 2, 4]}, input_shape=(4, 64), latency=False, progress=told.append,
    )
    text = format_sweep(result, width=100)
    assert max(len(line) for line in text.splitlines()) <= 100, text
    assert "FLOPs" in text.splitlines()[2] and re.search(r"\d MFLOPs ", text), text
    assert re.search(r"FLOPs = [\d.]+ [KM]FLOPs \+ [\d.]+ [KM]FLOPs \u00d7 layers", text), text
    assert told == ["layers=1 (1 of 3)", "layers=2 (2 of 3)", "layers=4 (3 of 3)"]
