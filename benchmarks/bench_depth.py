"""Profiling time against depth: a meta-built tiny LLaMA at 12/48/192/768 layers.

For each depth, in the same process and on the same meta model: ``profile_model`` (capture,
roll-up and partition: what a user waits for) and torch's ``FlopCounterMode`` (the anchor, a
bare dispatch-mode FLOP counter). Each is the best of ``--repeat`` runs. Prints the times, the
exponent k of time ~ layers^k fitted by least squares over log-log points from the smallest
to the largest depth, and our time over FlopCounterMode's at the largest depth.

Targets: k <= 1.05 and ratio <= 1.5 at 768 layers.

``--sequencer`` instead times timm's sequencer2d_s (LSTMs over image rows and columns): our
meta capture, our fake-tensor capture and FlopCounterMode on the same meta model (before,
meta was 25x slower than fake because aten.lstm decomposed step by step; target < 1 s).

Reproduce: python benchmarks/bench_depth.py
           python benchmarks/bench_depth.py --layers 12 48 --repeat 1   (quick)
           python benchmarks/bench_depth.py --sequencer
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


def best_of(fn: Callable[[], Any], repeat: int) -> tuple[float, float, Any]:
    """Best wall time, best CPU time of this process (less sensitive to other processes on a
    shared machine) and the last result."""
    best, best_cpu, result = float("inf"), float("inf"), None
    for _ in range(repeat):
        result = None
        gc.collect()
        start, start_cpu = time.perf_counter(), time.process_time()
        result = fn()
        best = min(best, time.perf_counter() - start)
        best_cpu = min(best_cpu, time.process_time() - start_cpu)
    return best, best_cpu, result


def fit_exponent(xs: list[int], ys: list[float]) -> float:
    lx = [math.log(x) for x in xs]
    ly = [math.log(y) for y in ys]
    mx, my = sum(lx) / len(lx), sum(ly) / len(ly)
    num = sum((a - mx) * (b - my) for a, b in zip(lx, ly, strict=True))
    den = sum((a - mx) ** 2 for a in lx)
    return num / den


def sequencer(repeat: int) -> None:
    import timm

    with torch.device("meta"):
        meta_model = timm.create_model("sequencer2d_s", pretrained=False).eval()
        x = torch.empty(1, 3, 224, 224)
    real_model = timm.create_model("sequencer2d_s", pretrained=False).eval()

    def anchor() -> int:
        with FlopCounterMode(display=False) as counter, torch.no_grad():
            meta_model(x)
        return int(counter.get_total_flops())

    t_meta, c_meta, p_meta = best_of(
        lambda: profile_model(meta_model, input_shape=(1, 3, 224, 224)), repeat)
    t_fake, c_fake, p_fake = best_of(
        lambda: profile_model(real_model, input_shape=(1, 3, 224, 224), mode="fake"), repeat)
    t_fcm, c_fcm, _ = best_of(anchor, repeat)
    same = (p_meta.total_flops, p_meta.total_macs) == (p_fake.total_flops, p_fake.total_macs)
    print(f"sequencer2d_s: ours meta {t_meta:.3f} s (cpu {c_meta:.3f}, {p_meta.num_ops} ops), "
          f"ours fake {t_fake:.3f} s (cpu {c_fake:.3f}, {p_fake.num_ops} ops), "
          f"FlopCounterMode meta {t_fcm:.3f} s (cpu {c_fcm:.3f}); "
          f"{p_meta.total_macs / 1e9:.3f} GMACs, meta == fake counts: {same}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--layers", type=int, nargs="+", default=[12, 48, 192, 768])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--sequencer", action="store_true",
                        help="time timm's sequencer2d_s (LSTMs) instead of the depth sweep")
    args = parser.parse_args(argv)
    if args.sequencer:
        sequencer(args.repeat)
        return 0

    print(f"torch {torch.__version__}, python {platform.python_version()}, {sys.platform}; "
          f"tiny LLaMA dim 64, {TOKENS} tokens, meta tensors; best of {args.repeat}")
    print(f"{'layers':>7s} {'ops':>8s} {'ours s':>9s} {'FlopCounterMode s':>18s} {'ratio':>6s}"
          f"   {'ours cpu s':>10s} {'FCM cpu s':>10s} {'ratio':>6s}")
    ours_t: list[float] = []
    anchor_t: list[float] = []
    ours_cpu: list[float] = []
    anchor_cpu: list[float] = []
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

        t_ours, c_ours, profile = best_of(ours, args.repeat)
        t_anchor, c_anchor, _ = best_of(anchor, args.repeat)
        ours_t.append(t_ours)
        anchor_t.append(t_anchor)
        ours_cpu.append(c_ours)
        anchor_cpu.append(c_anchor)
        print(f"{layers:7d} {profile.num_ops:8d} {t_ours:9.3f} {t_anchor:18.3f} "
              f"{t_ours / t_anchor:6.2f}   {c_ours:10.3f} {c_anchor:10.3f} "
              f"{c_ours / c_anchor:6.2f}", flush=True)
        assert profile.total_macs * 2 <= profile.total_flops
        del model, ids, profile, ours, anchor
    for label, ours_s, anchor_s in (("wall", ours_t, anchor_t), ("cpu", ours_cpu, anchor_cpu)):
        if len(args.layers) >= 2:
            k = fit_exponent(args.layers, ours_s)
            k_anchor = fit_exponent(args.layers, anchor_s)
            last = (math.log(ours_s[-1]) - math.log(ours_s[-2])) / (
                math.log(args.layers[-1]) - math.log(args.layers[-2]))
            print(f"{label}: exponent {args.layers[0]}->{args.layers[-1]} layers: ours {k:.3f} "
                  f"(last step {last:.3f}), FlopCounterMode {k_anchor:.3f}")
        print(f"{label}: ratio at {args.layers[-1]} layers: "
              f"{ours_s[-1] / anchor_s[-1]:.2f}x FlopCounterMode")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
