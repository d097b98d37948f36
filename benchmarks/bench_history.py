"""``modelprof history --json`` over a generated repository: 1,000 commits x 50 baselines.

The repository is written with one ``git fast-import`` stream (seconds, not minutes): 50
baselines of 60 layers and their op calls (about 15 KB each, the size of the dogfood
baselines), then commits that each change three of them (a seeded random walk of the FLOPs),
every 250th one moving all 50 to a new torch version. Times the whole command (git log, one
``cat-file --batch``, parsing and migrating every version, the series, the JSON) in a fresh
process, best of ``--repeat``. Target: at most 5 s.

    python benchmarks/bench_history.py [--commits 1000] [--baselines 50] [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from pytest_modelprof.baseline.document import (
    BaselineDocument,
    BaselineEnvironment,
    BaselineLayer,
)
from pytest_modelprof.baseline.store import baseline_relpath
from pytest_modelprof.schema import TensorSpec

LAYERS = 60


def _doc(test: str, flops: int, torch: str) -> bytes:
    layers = [BaselineLayer(name=f"features.{k}.conv", type="Conv2d", flops=flops // LAYERS,
                            macs=flops // LAYERS // 2, params=1000 + k, memory=flops // 600)
              for k in range(LAYERS)]
    doc = BaselineDocument(
        test=test, model="resnet18", inputs=[TensorSpec(shape=[1, 3, 224, 224], dtype="float32")],
        metrics={"flops": flops, "macs": flops // 2, "params": 11_689_512,
                 "traffic": flops // 10, "peak_activations": flops // 100,
                 "intensity": 10.0},
        layers=layers, settings={"max_flops_delta": "exact"},
        environment=BaselineEnvironment(torch_version=torch, device="meta", dtype="float32",
                                        capture_mode="meta"),
        uncounted_ops={},
        op_calls={f"features.{k}.conv": {"aten::convolution": 1, "aten::relu": 1}
                  for k in range(LAYERS)},
    )
    return doc.to_json().encode()


def generate(root: Path, commits: int, baselines: int, seed: int = 0) -> None:
    """A repository at ``root`` with ``commits`` commits over ``baselines`` baseline files."""
    rng = random.Random(seed)
    tests = [f"tests/test_zoo.py::test_model[{i:02d}]" for i in range(baselines)]
    paths = [f"baselines/{baseline_relpath(t).as_posix()}" for t in tests]
    flops = [1_800_000_000 + 10_000_000 * i for i in range(baselines)]
    torch = "2.10.0"
    subprocess.run(["git", "init", "-q", "-b", "main", str(root)], check=True)
    stream: list[bytes] = []

    def data(payload: bytes) -> None:
        stream.append(b"data %d\n" % len(payload) + payload + b"\n")

    for c in range(commits):
        if c == 0:
            changed = list(range(baselines))
            subject = "add the baselines"
        elif c % 250 == 0:
            torch = f"2.{10 + c // 250}.0"
            changed = list(range(baselines))
            subject = f"upgrade torch to {torch}"
        else:
            changed = rng.sample(range(baselines), 3)
            subject = f"change models {', '.join(map(str, changed))}"
        for i in changed:
            if c and c % 250:
                flops[i] = max(1, flops[i] + rng.choice((-1, 1)) * rng.randrange(1, 50_000_000))
        stream.append(b"commit refs/heads/main\n")
        stream.append(b"mark :%d\n" % (c + 1))
        stream.append(b"committer Dev <dev@example.com> %d +0000\n" % (1_700_000_000 + c * 3600))
        data(subject.encode())
        if c:
            stream.append(b"from :%d\n" % c)
        for i in changed:
            stream.append(f"M 100644 inline {paths[i]}\n".encode())
            data(_doc(tests[i], flops[i], torch))
        stream.append(b"\n")
    subprocess.run(["git", "-C", str(root), "fast-import", "--quiet"], input=b"".join(stream),
                   check=True)
    subprocess.run(["git", "-C", str(root), "checkout", "-q", "main"], check=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--commits", type=int, default=1000)
    parser.add_argument("--baselines", type=int, default=50)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "repo"
        start = time.perf_counter()
        generate(root, args.commits, args.baselines)
        made = time.perf_counter() - start
        out = Path(tmp) / "history.json"
        cmd = [sys.executable, "-m", "pytest_modelprof.cli", "history", "baselines",
               "--output", str(out)]
        times, cpu = [], []
        for _ in range(args.repeat):
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            start = time.perf_counter()
            subprocess.run(cmd, cwd=root, check=True, capture_output=True)
            times.append(time.perf_counter() - start)
            after = resource.getrusage(resource.RUSAGE_CHILDREN)  # git's processes included
            cpu.append(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime)
        doc = json.loads(out.read_text())
        points = sum(len(s["points"]) for t in doc["tests"] for s in t["series"])
        load = os.getloadavg()[0]
        print(f"repository: {args.commits} commits x {args.baselines} baselines, generated in "
              f"{made:.1f} s")
        print(f"history --json: best {min(times):.2f} s of {args.repeat} "
              f"({', '.join(f'{t:.2f}' for t in times)}), CPU time {min(cpu):.2f} s; "
              f"{len(doc['commits'])} commits, "
              f"{len(doc['tests'])} tests, {points} points; load average {load:.1f} "
              f"on {os.cpu_count()} CPUs")


if __name__ == "__main__":
    main()
