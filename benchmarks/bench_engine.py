"""Engine speed and memory against the anchors, measured in one process.

    python benchmarks/bench_engine.py            # everything (about 2-4 minutes on 2 cores)
    python benchmarks/bench_engine.py --only zoo # one section: resnet50 | zoo | yolo | llama70b

Anchors: fvcore's FlopCountAnalysis (JIT trace on real CPU tensors; it cannot run on meta) and
torch.utils.flop_counter.FlopCounterMode (on meta where it can build, else real). Ratios are
anchor time / our time: above 1 means we are faster.
"""

from __future__ import annotations

import argparse
import gc
import json
import resource
import subprocess
import sys
import time
import warnings
from collections.abc import Callable
from typing import Any

import torch
import torchvision

from pytest_modelprof.profile import profile_model


def best_of(fn: Callable[[], Any], repeat: int = 3) -> tuple[float, Any]:
    best, result = float("inf"), None
    for _ in range(repeat):
        gc.collect()
        t = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - t)
    return best, result


def flop_counter_macs(model: torch.nn.Module, *args: Any) -> int:
    from torch.utils.flop_counter import FlopCounterMode

    with FlopCounterMode(display=False) as counter, torch.no_grad():
        model(*args)
    return int(counter.get_total_flops() // 2)


def bench_resnet50() -> dict[str, Any]:
    from fvcore.nn import FlopCountAnalysis

    def ours() -> int:
        return profile_model("resnet50").total_macs

    real = torchvision.models.resnet50().eval()
    x = torch.randn(1, 3, 224, 224)

    def fvcore_count() -> int:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            analysis = FlopCountAnalysis(real, x)
            analysis.unsupported_ops_warnings(False).uncalled_modules_warnings(False)
            return int(analysis.total())

    with torch.device("meta"):
        meta_model = torchvision.models.resnet50().eval()
        meta_x = torch.empty(1, 3, 224, 224)

    ours_t, ours_macs = best_of(ours)
    fv_t, fv_macs = best_of(fvcore_count)
    fcm_meta_t, fcm_macs = best_of(lambda: flop_counter_macs(meta_model, meta_x))
    fcm_real_t, _ = best_of(lambda: flop_counter_macs(real, x))
    return {
        "ours_s": ours_t,
        "ours_gmacs": ours_macs / 1e9,
        "fvcore_s": fv_t,
        "fvcore_gmacs": fv_macs / 1e9,
        "flopcounter_meta_s": fcm_meta_t,
        "flopcounter_real_s": fcm_real_t,
        "flopcounter_gmacs": fcm_macs / 1e9,
        "ratio_fvcore": fv_t / ours_t,
        "ratio_flopcounter_meta": fcm_meta_t / ours_t,
    }


def bench_zoo() -> dict[str, Any]:
    names = sorted(torchvision.models.list_models(module=torchvision.models))
    start = time.perf_counter()
    for i, name in enumerate(names, 1):
        print(f"\r  zoo [{i}/{len(names)}] {name:<28}", end="", file=sys.stderr, flush=True)
        profile_model(name)
    ours_total = time.perf_counter() - start
    print(file=sys.stderr)
    fcm_ok, fcm_failed, fcm_total = 0, [], 0.0
    for name in names:
        t = time.perf_counter()
        try:
            kwargs = {"image_size": 518} if name == "vit_h_14" else {}
            with torch.device("meta"):
                model = torchvision.models.get_model(name, weights=None, **kwargs).eval()
                size = 518 if name == "vit_h_14" else 224
                x = torch.empty(1, 3, size, size)
            flop_counter_macs(model, x)
            fcm_ok += 1
        except Exception:
            fcm_failed.append(name)
        fcm_total += time.perf_counter() - t
    return {
        "models": len(names),
        "ours_total_s": ours_total,
        "flopcounter_meta_total_s": fcm_total,
        "flopcounter_ok": fcm_ok,
        "flopcounter_failed": fcm_failed,
        "ratio_flopcounter": fcm_total / ours_total,
    }


def bench_yolo() -> dict[str, Any]:
    from pytest_modelprof.models import resolve

    ours_t, ours = best_of(lambda: profile_model("yolov8n.yaml").total_macs)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = resolve("yolov8n.yaml").build()
    x = torch.randn(1, 3, 640, 640)
    model(x)  # lazy init (anchors/strides) outside the timing, as we do
    fcm_t, fcm = best_of(lambda: flop_counter_macs(model, x))
    return {
        "ours_s": ours_t,
        "ours_gmacs": ours / 1e9,
        "flopcounter_real_s": fcm_t,
        "flopcounter_gmacs": fcm / 1e9,
        "ratio_flopcounter": fcm_t / ours_t,
    }


def bench_llama70b() -> dict[str, Any]:
    # Run in a fresh interpreter so that peak RSS is this workload's alone.
    code = r"""
import json, resource, time, torch
t0 = time.perf_counter()
from pytest_modelprof.profile import profile_model
from pytest_modelprof.zoo import LLAMA_70B, LlamaDecoder, closed_form
with torch.device("meta"):
    model = LlamaDecoder(LLAMA_70B)
    ids = torch.zeros(1, 2048, dtype=torch.long)
t1 = time.perf_counter()
p = profile_model(model, inputs={"input_ids": ids})
t2 = time.perf_counter()
cf = closed_form(LLAMA_70B, 2048)
print(json.dumps({
    "build_s": t1 - t0, "profile_s": t2 - t1, "total_s": t2 - t0,
    "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    "params": p.total_params, "params_exact": p.total_params == cf["params"],
    "tflops": p.total_flops / 1e12, "flops_exact": p.total_flops == cf["flops"],
    "macs_exact": p.total_macs == cf["macs"], "mode": p.capture.mode,
}))
"""
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True)
    result: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


SECTIONS: dict[str, Callable[[], dict[str, Any]]] = {
    "resnet50": bench_resnet50,
    "zoo": bench_zoo,
    "yolo": bench_yolo,
    "llama70b": bench_llama70b,
}


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--only", choices=sorted(SECTIONS), action="append")
    args = parser.parse_args()
    profile_model("resnet18")  # import and registry warm-up, outside every timing
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads")
    for name in args.only or list(SECTIONS):
        print(f"== {name}", flush=True)
        result = SECTIONS[name]()
        for key, value in result.items():
            shown = f"{value:.3f}" if isinstance(value, float) else value
            print(f"  {key:28s} {shown}")
    print(
        f"peak RSS of this process: "
        f"{resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB"
    )


if __name__ == "__main__":
    main()
