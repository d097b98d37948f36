"""Scaling sweeps on real models: fitted exponents, the growth gate, and what a sweep costs.

* ResNet-18 over batch size (FLOPs and activations linear: exponent 1).
* A transformer encoder layer over sequence length (projections linear, attention quadratic:
  the total fits between 1 and 2, the attention module ~2).
* A per-token MLP before and after an injected L x L product: the gate
  ``max_flops_growth=1.1`` passes the first and fails the second.

Latency is measured at each point (5 rounds, single thread) and its exponent printed, but on a
shared machine it is indicative only; FLOPs and memory exponents are exact.

Reproduce: python benchmarks/bench_sweep.py        (well under a minute)
"""

from __future__ import annotations

import shlex
import sys
import time

import torch
import torchvision
from torch import nn

from pytest_modelprof.report.sweep_text import format_sweep
from pytest_modelprof.runtime.sweep import sweep
from pytest_modelprof.runtime.sweep_result import check_growth


class TokenMLP(nn.Module):
    def __init__(self, dim: int = 64, blow_up: bool = False) -> None:
        super().__init__()
        self.mlp = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim))
        self.blow_up = blow_up

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y: torch.Tensor = self.mlp(x)
        if self.blow_up:  # the "bug": every token attends to every other token
            y = (y @ y.transpose(-2, -1)).softmax(-1) @ y
        return y


def main() -> int:
    print(f"# {' '.join(shlex.quote(a) for a in [sys.executable, *sys.argv])}")
    torch.manual_seed(0)
    cases = [
        ("resnet18", torchvision.models.resnet18(weights=None), {"batch": [1, 2, 4, 8]},
         (1, 3, 64, 64)),
        ("encoder layer", nn.TransformerEncoderLayer(128, 4, 256, batch_first=True),
         {"seq_len": [64, 128, 256, 512]}, (1, 64, 128)),
        ("token MLP", TokenMLP(), {"seq_len": [64, 128, 256, 512]}, (1, 64, 64)),
        ("token MLP + blow-up", TokenMLP(blow_up=True), {"seq_len": [64, 128, 256, 512]},
         (1, 64, 64)),
    ]
    limits = {"max_flops_growth": 1.1}
    for label, model, over, shape in cases:
        started = time.perf_counter()
        result = sweep(model, over=over, input_shape=shape, rounds=5, warmup=1, name=label)
        took = time.perf_counter() - started
        print()
        print(format_sweep(result), end="")
        violations = check_growth(result, limits)
        verdict = "FAIL: " + violations[0].message if violations else "pass"
        points = sum(len(s.points) for s in result.series)
        print(f"  gate max_flops_growth=1.1: {verdict}")
        print(f"  {points} points in {took:.2f} s ({took / points * 1000:.0f} ms per point, "
              "capture + 5 timed rounds)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
