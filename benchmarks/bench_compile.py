"""Compile health: cost against a bare ``torch._dynamo.explain``, Inductor compile times, a zoo.

    python benchmarks/bench_compile.py --only explain   # resnet50: ours vs explain, same run
    python benchmarks/bench_compile.py --only inductor  # resnet18 and YOLOv8n, caches off
    python benchmarks/bench_compile.py --only zoo       # 80 torchvision models + YOLOv8n (long)
    python benchmarks/bench_compile.py --only zoo --markdown zoo.md   # also write the table

The anchor of the first section is ``torch._dynamo.explain`` on the same module and inputs,
interleaved with ours, best of ``--repeat``; the ratio printed is ours / explain (at most 1.2
is the target). The zoo uses small inputs (1x3x64x64; a model that cannot run at that size
falls back to 224x224, then to its registry default) and prints one progress line per model.
"""

from __future__ import annotations

import argparse
import functools
import gc
import sys
import time
import warnings
from collections import Counter
from collections.abc import Callable
from typing import Any

import torch

from pytest_modelprof import _compat
from pytest_modelprof.compile import CompileHealth, analyze_compile
from pytest_modelprof.profile import real_model_and_inputs


def timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    gc.collect()
    start = time.perf_counter()
    result = fn()
    return time.perf_counter() - start, result


def bench_explain(repeat: int) -> dict[str, Any]:
    """resnet50 at 1x3x224x224: analyze_compile vs torch._dynamo.explain, interleaved."""
    model, (args, _) = real_model_and_inputs("resnet50")

    def explain() -> int:
        with torch.no_grad(), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out = _compat.dynamo_explain(model)(*args)
        return int(out.graph_break_count)

    def ours() -> int:
        return analyze_compile(model, args).graph_breaks

    explain()  # warm both paths once (imports, first-use initialisation)
    ours()
    t_explain, t_ours = float("inf"), float("inf")
    for _ in range(repeat):
        t, breaks_explain = timed(explain)
        t_explain = min(t_explain, t)
        t, breaks_ours = timed(ours)
        t_ours = min(t_ours, t)
    ratio = t_ours / t_explain
    print(
        f"resnet50 graph breaks: ours {t_ours:.2f} s ({breaks_ours} breaks), "
        f"torch._dynamo.explain {t_explain:.2f} s ({breaks_explain} breaks), "
        f"ratio ours/explain {ratio:.2f} (target <= 1.2)",
        flush=True,
    )
    return {"ours_s": t_ours, "explain_s": t_explain, "ratio": ratio}


def bench_inductor() -> None:
    """Inductor compile time (caches off) and kernel counts of resnet18 and YOLOv8n."""
    for name, shape in (("resnet18", (1, 3, 224, 224)), ("yolov8n.yaml", (1, 3, 640, 640))):
        t, health = timed(
            functools.partial(analyze_compile, name, input_shape=shape, inductor=True)
        )
        print(
            f"{name} {'x'.join(map(str, shape))}: Inductor compile {health.compile_time:.1f} s, "
            f"{health.kernels} kernels, {health.graphs} graphs, {health.graph_breaks} breaks "
            f"(whole analysis {t:.1f} s)",
            flush=True,
        )


def _zoo_one(name: str) -> tuple[CompileHealth, tuple[int, ...], float]:
    from pytest_modelprof.models import resolve

    default = resolve(name).default_input_shape
    shapes: list[tuple[int, ...]] = [(1, 3, 64, 64), (1, 3, 224, 224)]
    if default is not None and tuple(default) not in shapes:
        shapes.append(tuple(default))
    error: Exception | None = None
    for shape in shapes:
        try:
            t, health = timed(functools.partial(analyze_compile, name, input_shape=shape))
            return health, shape, t
        except Exception as exc:  # try the next size
            error = exc
    assert error is not None
    raise error


def bench_zoo(markdown: str | None, limit: int | None) -> None:
    import torchvision

    names = sorted(torchvision.models.list_models(module=torchvision.models)) + ["yolov8n.yaml"]
    if limit:
        names = names[:limit]
    rows: list[str] = []
    total = time.perf_counter()
    for i, name in enumerate(names, 1):
        try:
            health, shape, t = _zoo_one(name)
        except Exception as exc:
            line = f"| {name} | - | - | - | failed: {str(exc).splitlines()[0][:80]} | - |"
            print(f"[{i}/{len(names)}] {name}: FAILED {exc!s:.200}", flush=True)
            rows.append(line)
            continue
        reasons = Counter(str(br) for br in health.break_reasons)
        where = "; ".join(f"{r} (x{n})" if n > 1 else r for r, n in reasons.items()) or "-"
        size = f"{shape[-2]}x{shape[-1]}"
        rows.append(
            f"| {name} | {size} | {health.graphs} | {health.graph_breaks} | {where} | {t:.1f} |"
        )
        print(
            f"[{i}/{len(names)}] {name} @{size}: {health.graphs} graphs, "
            f"{health.graph_breaks} breaks, {t:.1f} s  {where}",
            flush=True,
        )
    print(f"zoo: {len(names)} models in {time.perf_counter() - total:.0f} s", flush=True)
    table = "\n".join(
        [
            "| model | input | graphs | breaks | break locations and reasons | s |",
            "|---|---|---:|---:|---|---:|",
            *rows,
        ]
    )
    if markdown:
        with open(markdown, "w", encoding="utf-8") as handle:
            handle.write(table + "\n")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", choices=("explain", "inductor", "zoo"), default=None)
    parser.add_argument("--repeat", type=int, default=3, help="rounds of the explain section")
    parser.add_argument("--markdown", default=None, help="write the zoo table to this file")
    parser.add_argument("--limit", type=int, default=None, help="only the first N zoo models")
    args = parser.parse_args(argv)
    print(
        f"torch {torch.__version__}, {torch.get_num_threads()} threads, python "
        f"{sys.version.split()[0]}",
        flush=True,
    )
    if args.only in (None, "explain"):
        bench_explain(args.repeat)
    if args.only in (None, "inductor"):
        bench_inductor()
    if args.only in (None, "zoo"):
        bench_zoo(args.markdown, args.limit)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
