"""Repeatability, detection and cost of the instruction-count gate.

What it does:

1. Three models: a small CNN (1 x 3 x 32 x 32), a small transformer encoder block (1 x 16 x 64)
   and torchvision's mobilenet_v3_small at 1 x 3 x 32 x 32 (many small ops: the Python and
   dispatch overhead the count sees). For each, a copy whose forward does about
   2 % more work: a calibrated number of extra small ops (``x + 0``) inside the forward, the
   count found from the instructions one such op costs in the first server.
2. Starts a callgrind server (``InstructionServer``, the gate's) and measures every model
   ``--repeats`` times (each a fresh pickled copy, as a test sends it), then the +2 % copies as
   often. The first server ("quiet") runs with the machine as it is; the second ("busy") with
   ``python3 -c "while True: pass"`` spinning beside it. Each server is a separate session:
   its first measurement of a model is the baseline a session would have written.
3. Reports per model and server the spread of the unchanged measurements ((max - min) / mean;
   target <= 0.1 %), and, against the quiet server's first measurement as the baseline with
   the gate's default tolerance (``max_instructions_delta`` +1 %): false alarms of the
   unchanged model (target 0) and detections of the +2 % copy (target 100 %), and with the
   busy server measured against the quiet baseline (another session, another load).
4. With ``--sessions 1,5,20``: the wall time of a pytest session of N tests, each with an
   instructions limit on the small CNN (one valgrind start per session).

Reproduce: python benchmarks/bench_instructions.py                    (15-45 min, 2 busy cores)
           python benchmarks/bench_instructions.py --sessions 1,5,20  (plus the session costs)
           python benchmarks/bench_instructions.py --sessions 1,5,20 --only-sessions
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path
from typing import Any

import torch
from torch import nn

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the server imports these classes


class SmallCNN(nn.Module):
    """Two convolutions, a pool and a linear head; ``extra`` small ops of added work."""

    def __init__(self, extra: int = 0) -> None:
        super().__init__()
        self.c1, self.c2 = nn.Conv2d(3, 16, 3, padding=1), nn.Conv2d(16, 16, 3, padding=1)
        self.fc = nn.Linear(16, 10)
        self.extra = extra

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = torch.relu(self.c1(x))
        for _ in range(self.extra):  # the injected work
            x = x + 0
        x = torch.relu(self.c2(x))
        return self.fc(x.mean((2, 3)))


class Block(nn.Module):
    """One transformer encoder layer (d_model 64, 4 heads)."""

    def __init__(self, extra: int = 0) -> None:
        super().__init__()
        self.layer = nn.TransformerEncoderLayer(
            64, 4, dim_feedforward=128, batch_first=True, dropout=0.0
        )
        self.extra = extra

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for _ in range(self.extra):
            x = x + 0
        return self.layer(x)


class Mobilenet(nn.Module):
    """torchvision's mobilenet_v3_small (random weights)."""

    def __init__(self, extra: int = 0) -> None:
        super().__init__()
        import torchvision

        torch.manual_seed(0)
        self.net = torchvision.models.mobilenet_v3_small(weights=None)
        self.extra = extra

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for _ in range(self.extra):
            x = x + 0
        return self.net(x)


MODELS: dict[str, tuple[type[nn.Module], tuple[int, ...]]] = {
    "small CNN": (SmallCNN, (1, 3, 32, 32)),
    "transformer block": (Block, (1, 16, 64)),
    "mobilenet_v3_small @32px": (Mobilenet, (1, 3, 32, 32)),
}
TOLERANCE = 0.01  # max_instructions_delta's default


def _build(cls: type[nn.Module], extra: int) -> nn.Module:
    torch.manual_seed(0)
    return cls(extra)


def measure_all(server: Any, repeats: int, extras: dict[str, int]) -> dict[str, Any]:
    """Every model ``repeats`` times, then its +2 % copy as often: forward instructions."""
    out: dict[str, Any] = {}
    for name, (cls, shape) in MODELS.items():
        same = [server.measure(_build(cls, 0), input_shape=shape).forward for _ in range(repeats)]
        more = [
            server.measure(_build(cls, extras[name]), input_shape=shape).forward
            for _ in range(repeats)
        ]
        out[name] = {"same": same, "more": more}
        print(f"  {name}: {same} / +2 %: {more}", flush=True)
    return out


def calibrate(server: Any) -> dict[str, int]:
    """Extra ops that add about 2 % to each model (from 20 extra ops' cost)."""
    extras = {}
    for name, (cls, shape) in MODELS.items():
        base = server.measure(_build(cls, 0), input_shape=shape).forward
        plus = server.measure(_build(cls, 20), input_shape=shape).forward
        per_op = max((plus - base) / 20, 1.0)
        extras[name] = max(1, round(0.02 * base / per_op))
        print(
            f"  {name}: {base:,} instructions, {per_op:,.0f} per extra op -> "
            f"{extras[name]} ops for +2 %",
            flush=True,
        )
    return extras


def _spread(values: list[int]) -> float:
    mean = sum(values) / len(values)
    return (max(values) - min(values)) / mean


def summarise(runs: dict[str, dict[str, Any]]) -> list[str]:
    """The table: spread, false alarms and detections per model and scenario."""
    quiet = runs["quiet"]
    lines = [
        "| model | server | spread (max-min)/mean | false alarms | +2 % detected |",
        "|---|---|---|---|---|",
    ]
    for name in MODELS:
        baseline = quiet[name]["same"][0]
        for server, data in runs.items():
            same, more = data[name]["same"], data[name]["more"]
            # The quiet server's first measurement is the baseline; it is not judged against
            # itself.
            judged = same[1:] if server == "quiet" else same
            alarms = sum(v > baseline * (1 + TOLERANCE) for v in judged)
            found = sum(v > baseline * (1 + TOLERANCE) for v in more)
            lines.append(
                f"| {name} | {server} | {100 * _spread(same):.3f} % | {alarms}/{len(judged)} "
                f"| {found}/{len(more)} (+{100 * (sum(more) / len(more) / baseline - 1):.2f} %) |"
            )
    for name in MODELS:
        values = [v for data in runs.values() for v in data[name]["same"]]
        lines.append(f"| {name} | both servers | {100 * _spread(values):.3f} % | | |")
    return lines


def session_cost(counts: list[int]) -> list[str]:
    """Wall time of a pytest session with N instruction-limited tests (one valgrind start)."""
    lines = ["| tests | session wall time | load average before / after |", "|---|---|---|"]
    for n in counts:
        load_before = os.getloadavg()[0]  # other processes on the machine stretch wall time
        with tempfile.TemporaryDirectory() as tmp:
            root = Path(tmp)
            (root / "nets.py").write_text(
                textwrap.dedent("""
                import torch
                from torch import nn
                class SmallCNN(nn.Module):
                    def __init__(self):
                        super().__init__()
                        self.c1 = nn.Conv2d(3, 16, 3, padding=1)
                        self.fc = nn.Linear(16, 10)
                    def forward(self, x):
                        return self.fc(torch.relu(self.c1(x)).mean((2, 3)))
            """)
            )
            tests = ["import pytest", "from nets import SmallCNN", ""]
            for i in range(n):
                tests += [
                    "@pytest.mark.profile(max_instructions=1e9)",
                    f"def test_{i}(modelprof):",
                    "    modelprof(SmallCNN(), input_shape=(1, 3, 32, 32))",
                    "",
                ]
            (root / "test_many.py").write_text("\n".join(tests))
            env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(root), *sys.path]))
            start = time.perf_counter()
            done = subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "pytest",
                    "-q",
                    "-p",
                    "no:cacheprovider",
                    "--modelprof-update-baselines",
                    str(root),
                ],
                cwd=root,
                env=env,
                capture_output=True,
                text=True,
            )
            took = time.perf_counter() - start
            status = "" if done.returncode == 0 else f" (exit {done.returncode})"
            load = f"{load_before:.1f} / {os.getloadavg()[0]:.1f}"
            lines.append(f"| {n} | {took:.0f} s{status} | {load} |")
            print(f"  {n} tests: {took:.0f} s{status}", flush=True)
            if done.returncode:
                print(done.stdout[-2000:], flush=True)
    return lines


def main() -> None:
    from pytest_modelprof.instructions import InstructionServer

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--sessions", default="", help="e.g. 1,5,20: time pytest sessions")
    parser.add_argument("--save", type=Path, help="write the raw counts here (JSON)")
    parser.add_argument(
        "--only-sessions", action="store_true", help="time the --sessions alone (no servers)"
    )
    args = parser.parse_args()
    if args.only_sessions:
        print("\n".join(session_cost([int(n) for n in args.sessions.split(",")])))
        return

    runs: dict[str, Any] = {}
    started: dict[str, float] = {}
    extras: dict[str, int] = {}
    for scenario in ("quiet", "busy"):
        spinner = None
        if scenario == "busy":
            spinner = subprocess.Popen([sys.executable, "-c", "while True: pass"])
        try:
            t0 = time.perf_counter()
            with InstructionServer() as server:
                started[scenario] = time.perf_counter() - t0
                print(f"{scenario}: server up in {started[scenario]:.0f} s", flush=True)
                if not extras:
                    extras = calibrate(server)
                runs[scenario] = measure_all(server, args.repeats, extras)
        finally:
            if spinner is not None:
                spinner.kill()
                spinner.wait()
    lines = summarise(runs)
    lines.append("")
    lines.append(
        "server start-up (import torch under callgrind): "
        + ", ".join(f"{k} {v:.0f} s" for k, v in started.items())
    )
    if args.sessions:
        lines += [""] + session_cost([int(n) for n in args.sessions.split(",")])
    print("\n".join(lines))
    if args.save:
        args.save.write_text(
            json.dumps({"runs": runs, "extras": extras, "started": started}, indent=2)
        )


if __name__ == "__main__":
    if __package__ in (None, ""):
        # Run as a script: measure the classes of the importable module, not of __main__, so
        # that the server can unpickle them.
        import bench_instructions

        bench_instructions.main()
    else:
        main()
