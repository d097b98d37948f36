"""Profiling time against depth: a meta-built tiny LLaMA at 12/48/192/768 layers.

For each depth, in the same process and on the same meta model: ``profile_model`` (capture,
roll-up and partition: what a user waits for) and torch's ``FlopCounterMode`` (the anchor, a
bare dispatch-mode FLOP counter). Each is the best of ``--repeat`` runs. Prints the times, the
exponent k of time ~ layers^k fitted by least squares over log-log points from the smallest
to the largest depth, and our time over FlopCounterMode's at the largest depth.

Targets (issue 11): k <= 1.05 and ratio <= 1.5 at 768 layers.

Reproduce: python benchmarks/bench_depth.py
           python benchmarks/bench_depth.py --layers 12 48 --repeat 1   (quick)
"""

from __future__ import annotations

import argparse
import gc
import math
import platform
import sys
import time
from collections.abc import Callable
from typing import Any

import torch
from torch.utils.flop_counter import FlopCounterMode

from pytest_modelprof.profile import profile_model
from pytest_modelprof.zoo import LlamaConfig, LlamaDecoder

TOKENS = 32


def tiny(layers: int) -> LlamaConfig:
    return LlamaConfig(vocab=256, dim=64, layers=layers, heads=4, kv_heads=2, ffn=128,
                       max_seq=TOKENS)


def best_of(fn: Callable[[], Any], repeat: int) -> tuple[float, Any]:
    best, result = float("inf"), None
    for _ in range(repeat):
        gc.collect()
        start = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - start)
    return best, result


def fit_exponent(xs: list[int], ys: list[float]) -> float:
    lx = [math.log(x) for x in xs]
    ly = [math.log(y) for y in ys]
    mx, my = sum(lx) / len(lx), sum(ly) / len(ly)
    num = sum((a - mx) * (b - my) for a, b in zip(lx, ly, strict=True))
    den = sum((a - mx) ** 2 for a in lx)
    return num / den


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--layers", type=int, nargs="+", default=[12, 48, 192, 768])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)

    print(f"torch {torch.__version__}, python {platform.python_version()}, {sys.platform}; "
          f"tiny LLaMA dim 64, {TOKENS} tokens, meta tensors; best of {args.repeat}")
    print(f"{'layers':>7s} {'ops':>8s} {'ours s':>9s} {'FlopCounterMode s':>18s} {'ratio':>6s}")
    ours_t: list[float] = []
    anchor_t: list[float] = []
    for layers in args.layers:
        with torch.device("meta"):
            model = LlamaDecoder(tiny(layers)).eval()
            ids = torch.zeros(1, TOKENS, dtype=torch.long)

        def ours(model: Any = model, ids: Any = ids, name: str = f"llama-{layers}") -> Any:
            return profile_model(model, inputs=(ids,), name=name)

        def anchor(model: Any = model, ids: Any = ids) -> int:
            with FlopCounterMode(display=False) as counter, torch.no_grad():
                model(ids)
            return int(counter.get_total_flops())

        t_ours, profile = best_of(ours, args.repeat)
        t_anchor, anchor_flops = best_of(anchor, args.repeat)
        ours_t.append(t_ours)
        anchor_t.append(t_anchor)
        print(f"{layers:7d} {profile.num_ops:8d} {t_ours:9.3f} {t_anchor:18.3f} "
              f"{t_ours / t_anchor:6.2f}")
        assert profile.total_macs * 2 <= profile.total_flops
        del model, profile
    if len(args.layers) >= 2:
        k = fit_exponent(args.layers, ours_t)
        k_anchor = fit_exponent(args.layers, anchor_t)
        last = (math.log(ours_t[-1]) - math.log(ours_t[-2])) / (
            math.log(args.layers[-1]) - math.log(args.layers[-2]))
        print(f"exponent {args.layers[0]}->{args.layers[-1]} layers: ours {k:.3f} "
              f"(last step {last:.3f}), FlopCounterMode {k_anchor:.3f}")
    print(f"ratio at {args.layers[-1]} layers: {ours_t[-1] / anchor_t[-1]:.2f}x FlopCounterMode")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
