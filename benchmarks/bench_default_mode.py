"""The default mode on a user's module against FlopCounterMode on meta, in one process.

    python benchmarks/bench_default_mode.py               # resnet50, vit_b_16, convnext_tiny, gpt2
    python benchmarks/bench_default_mode.py --only gpt2   # one model
    python benchmarks/bench_default_mode.py --repeat 7    # more rounds (best of N)
    python benchmarks/bench_default_mode.py --cold        # forget learnt meta kernels each call

For each model: ``profile_model(module, ...)`` with the default mode on a module built with
real weights on the CPU (what a user hands us), against ``FlopCounterMode`` counting one forward
of the same architecture built on meta (the anchor: its counting pass alone, model and inputs
already built). Rounds alternate between the two so a busy machine slows both alike; the best
of ``--repeat`` rounds is kept, each timed with the garbage collector off (as ``timeit`` does),
for both. Ratio = ours / anchor in CPU time (``time.process_time``, one
intra-op thread), which a loaded machine distorts far less than wall time; the wall-time ratio
is printed beside it. Target: at most 1.0 (first at most 1.3). ``--cold``
empties the table of meta-kernel outputs (``capture/metacache.py``) before each call of ours,
as for the first profile of an architecture in a process. The MACs
of the default mode are checked against ``mode="fake"`` (the previous default) and printed
beside FlopCounterMode's.
"""

from __future__ import annotations

import argparse
import gc
import json
import math
import time
import warnings
from collections.abc import Callable
from typing import Any

import torch
from torch import nn

from pytest_modelprof.capture import metacache
from pytest_modelprof.profile import profile_model

Build = Callable[[], nn.Module]


def _resnet50() -> nn.Module:
    import torchvision

    return torchvision.models.resnet50()


def _vit_b_16() -> nn.Module:
    import torchvision

    return torchvision.models.vit_b_16()


def _convnext_tiny() -> nn.Module:
    import timm

    return timm.create_model("convnext_tiny", pretrained=False)


def _gpt2() -> nn.Module:
    import transformers

    return transformers.GPT2LMHeadModel(transformers.GPT2Config())


def _image(device: str) -> dict[str, Any]:
    return {"x": torch.randn(1, 3, 224, 224, device=device)}


def _tokens(device: str) -> dict[str, Any]:
    return {"input_ids": torch.randint(0, 50257, (1, 512), device=device)}


MODELS: dict[str, tuple[Build, Callable[[str], dict[str, Any]]]] = {
    "resnet50": (_resnet50, _image),
    "vit_b_16": (_vit_b_16, _image),
    "convnext_tiny": (_convnext_tiny, _image),
    "gpt2": (_gpt2, _tokens),
}


def _call_inputs(made: dict[str, Any]) -> Any:
    return (made["x"],) if "x" in made else made


def flop_counter_macs(model: nn.Module, inputs: Any) -> int:
    from torch.utils.flop_counter import FlopCounterMode

    args, kwargs = (inputs, {}) if isinstance(inputs, tuple) else ((), inputs)
    with FlopCounterMode(display=False) as counter, torch.no_grad():
        model(*args, **kwargs)
    return int(counter.get_total_flops() // 2)


def bench(name: str, repeat: int, cold: bool = False) -> dict[str, Any]:
    build, inputs = MODELS[name]
    torch.manual_seed(0)
    user_module = build().eval()
    user_inputs = _call_inputs(inputs("cpu"))
    with torch.device("meta"):
        meta_module = build().eval()
    meta_inputs = _call_inputs(inputs("meta"))

    def ours() -> Any:
        if cold:
            metacache.clear()
        return profile_model(user_module, inputs=user_inputs)

    def anchor() -> int:
        return flop_counter_macs(meta_module, meta_inputs)

    ours(), anchor()  # first calls pay imports and caches, for both
    best: dict[str, list[float]] = {"ours": [math.inf, math.inf], "anchor": [math.inf, math.inf]}
    for _ in range(repeat):
        for which in ("ours", "anchor"):
            gc.collect()
            gc.disable()  # as timeit does, for both: no collection of the other's garbage
            wall, cpu = time.perf_counter(), time.process_time()
            result = ours() if which == "ours" else anchor()
            cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
            gc.enable()
            best[which] = [min(best[which][0], cpu), min(best[which][1], wall)]
            if which == "ours":
                profile = result
            else:
                anchor_macs = result
    fake_cpu = math.inf  # fake tensors: the default for a module before the meta capture
    for _ in range(3):
        start = time.process_time()
        fake = profile_model(user_module, inputs=user_inputs, mode="fake")
        fake_cpu = min(fake_cpu, time.process_time() - start)
    (ours_cpu, ours_wall), (anchor_cpu, anchor_wall) = best["ours"], best["anchor"]
    return {
        "model": name,
        "mode": profile.capture.mode,
        "ours_cpu_s": round(ours_cpu, 4),
        "flopcounter_meta_cpu_s": round(anchor_cpu, 4),
        "ratio": round(ours_cpu / anchor_cpu, 3),
        "ours_wall_s": round(ours_wall, 4),
        "flopcounter_meta_wall_s": round(anchor_wall, 4),
        "ratio_wall": round(ours_wall / anchor_wall, 3),
        "fake_mode_cpu_s": round(fake_cpu, 4),
        "ratio_fake_mode": round(fake_cpu / anchor_cpu, 3),
        "macs": profile.total_macs,
        "macs_fake_mode": fake.total_macs,
        "counts_unchanged": (profile.total_macs, profile.total_flops, profile.total_traffic)
        == (fake.total_macs, fake.total_flops, fake.total_traffic),
        "flopcounter_macs": anchor_macs,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", choices=sorted(MODELS))
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument(
        "--cold", action="store_true", help="forget learnt meta kernels before each call of ours"
    )
    args = parser.parse_args()
    torch.set_num_threads(1)
    warnings.simplefilter("ignore")
    names = [args.only] if args.only else list(MODELS)
    rows = [bench(name, args.repeat, args.cold) for name in names]
    for row in rows:
        print(
            f"{row['model']:<14} default mode ({row['mode']}) {row['ours_cpu_s']:.3f} s   "
            f"FlopCounterMode on meta {row['flopcounter_meta_cpu_s']:.3f} s   "
            f"ratio {row['ratio']:.2f} (wall {row['ratio_wall']:.2f}; "
            f"fake mode {row['ratio_fake_mode']:.2f})   "
            f"MACs {row['macs'] / 1e9:.3f} G "
            f"(fake mode {row['macs_fake_mode'] / 1e9:.3f} G, "
            f"FlopCounterMode {row['flopcounter_macs'] / 1e9:.3f} G)"
        )
    print(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
