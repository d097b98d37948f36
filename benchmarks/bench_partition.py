"""What partitioning adds to profiling, over torchvision's classification models.

For each model (all 80 by default): build it on the meta device (RegNets read tensor values
while they are built, so those are built on the CPU and moved to meta), profile it once at
1x3x224x224, then partition the capture. Both steps are timed with ``time.perf_counter``;
the partition is timed as the best of ``--repeat`` runs, the profile once (it dominates and is
what a user waits for). The target is partition <= 50 % of profile time, per model and overall.

Reproduce: python benchmarks/bench_partition.py                 (a few minutes on a laptop)
           python benchmarks/bench_partition.py resnet18 vit_b_16 --json out.json
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from dataclasses import asdict, dataclass

import torch
import torchvision
from torch import nn

from pytest_modelprof.analysis.partition import partition
from pytest_modelprof.profile import profile_with_capture

TARGET = 0.5


@dataclass
class Row:
    model: str
    ops: int
    subgraphs: int
    stages: int
    profile_s: float
    partition_s: float

    @property
    def ratio(self) -> float:
        return self.partition_s / self.profile_s if self.profile_s else 0.0


def build_on_meta(name: str) -> nn.Module:
    model: nn.Module
    try:
        with torch.device("meta"):
            model = torchvision.models.get_model(name)
    except Exception:  # construction reads values (RegNet's width rounding)
        model = torchvision.models.get_model(name).to("meta")
    return model


def measure(name: str, repeat: int) -> Row:
    model = build_on_meta(name)
    start = time.perf_counter()
    made = profile_with_capture(model, input_shape=(1, 3, 224, 224), name=name)
    profile_s = time.perf_counter() - start
    capture = made.capture
    best = float("inf")
    report = None
    for _ in range(repeat):
        start = time.perf_counter()
        report = partition(capture)
        best = min(best, time.perf_counter() - start)
    assert report is not None
    return Row(name, len(capture.ops), len(report.subgraphs), report.concurrency.num_stages,
               profile_s, best)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("models", nargs="*",
                        help="torchvision names (default: all classification models)")
    parser.add_argument("--repeat", type=int, default=3,
                        help="partition runs per model (the best is kept)")
    parser.add_argument("--json", metavar="FILE", help="also write the rows as JSON")
    args = parser.parse_args(argv)
    names = args.models or sorted(torchvision.models.list_models(module=torchvision.models))
    torch.set_num_threads(1)
    print(f"# torch {torch.__version__}, torchvision {torchvision.__version__}, "
          f"python {platform.python_version()}, {platform.machine()}, 1 thread")
    print(f"{'model':<28} {'ops':>6} {'subgraphs':>9} {'stages':>6} "
          f"{'profile s':>10} {'partition s':>12} {'ratio':>7}")
    rows: list[Row] = []
    for name in names:
        try:
            row = measure(name, args.repeat)
        except Exception as exc:  # report and go on: one model must not hide the others
            print(f"{name:<28} failed: {type(exc).__name__}: {exc}", file=sys.stderr)
            continue
        rows.append(row)
        print(f"{row.model:<28} {row.ops:>6} {row.subgraphs:>9} {row.stages:>6} "
              f"{row.profile_s:>10.3f} {row.partition_s:>12.4f} {row.ratio:>7.1%}", flush=True)
    if not rows:
        return 1
    total_profile = sum(r.profile_s for r in rows)
    total_partition = sum(r.partition_s for r in rows)
    worst = max(rows, key=lambda r: r.ratio)
    overall = total_partition / total_profile
    print(f"\n{len(rows)} models: profile {total_profile:.2f} s, "
          f"partition {total_partition:.2f} s, overall {overall:.1%}; "
          f"worst {worst.model} {worst.ratio:.1%} (target <= {TARGET:.0%})")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump([{**asdict(r), "ratio": r.ratio} for r in rows], fh, indent=2)
            fh.write("\n")
    return 0 if worst.ratio <= TARGET else 2


if __name__ == "__main__":
    sys.exit(main())
