"""False-alarm and detection rates of the latency gate, on this machine, with and without load.

What it does:

1. Builds a small CNN (single-threaded, ~ms per forward) and a copy whose forward is slowed
   by a calibrated busy-wait: after the real forward it spins for ``--slowdown`` times the
   duration of *that very call*, so the injected cost stays a fixed fraction of the model's
   time even when load slows the model down.
2. Records ``--sessions`` measurement sessions of each variant (``measure_normalised``:
   alternating model / calibration rounds), first on an idle machine, then with a background
   process spinning on the other core (bounded in time; it exits on its own).
3. Simulates many baseline-vs-current comparisons: every unchanged session serves as the
   stored baseline against every *other* unchanged session (false alarms) and every slowed
   session (detections). Scenarios: idle vs idle, loaded vs loaded, and idle baseline vs
   loaded run (a slower runner). Each is judged with calibration-normalised ratios and, for
   contrast, with raw milliseconds.

Pairs share sessions, so they are not independent; the rates are estimates, not exact
probabilities. Timings on a shared machine are noisy by nature: rerun it where it matters.

Reproduce: python benchmarks/bench_timing_gate.py            (about 1-3 minutes)
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import platform
import shlex
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import torch
from torch import nn

from pytest_modelprof.runtime.noise import (
    DEFAULT_ALPHA,
    DEFAULT_TOLERANCE,
    NormalisedTiming,
    compare_timings,
    decide,
    measure_normalised,
)


def _bench_model() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(
        nn.Conv2d(3, 32, 3, padding=1), nn.ReLU(),
        nn.Conv2d(32, 32, 3, stride=2, padding=1), nn.ReLU(),
        nn.Conv2d(32, 64, 3, stride=2, padding=1), nn.ReLU(),
        nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(64, 10),
    ).eval()


class SlowedDown(nn.Module):
    """``inner`` plus a busy-wait of ``fraction`` times the duration of each call."""

    def __init__(self, inner: nn.Module, fraction: float) -> None:
        super().__init__()
        self.inner = inner
        self.fraction = fraction

    def forward(self, x: torch.Tensor) -> Any:
        start = time.perf_counter_ns()
        out = self.inner(x)
        elapsed = time.perf_counter_ns() - start
        until = start + int(elapsed * (1.0 + self.fraction))
        while time.perf_counter_ns() < until:
            pass
        return out


def _spin(deadline: float) -> None:
    """Background load: a pure-Python busy loop that stops by itself at ``deadline``."""
    x = 1.0
    while time.time() < deadline:
        for _ in range(10_000):
            x = x * 1.0000001 + 1e-9


@dataclass
class Rates:
    scenario: str
    values: str  # "normalised" or "raw ms"
    tolerance: float
    alpha: float
    false_alarms: int
    unchanged_pairs: int
    detections: int
    slowed_pairs: int
    false_alarm_rate: float
    detection_rate: float


def _sessions(
    fns: dict[str, Callable[[], object]], count: int, rounds: int
) -> dict[str, list[NormalisedTiming]]:
    out: dict[str, list[NormalisedTiming]] = {name: [] for name in fns}
    names = list(fns)
    for k in range(count):
        order = names if k % 2 == 0 else names[::-1]
        for name in order:
            out[name].append(measure_normalised(fns[name], rounds=rounds, warmup=3))
    return out


Evidence = tuple[float, float, float]  # slowdown, p_slower, p_faster


def _evidence(
    base: Sequence[NormalisedTiming], current: Sequence[NormalisedTiming], normalised: bool,
    disjoint: bool,
) -> list[Evidence]:
    """One compare_timings() per (baseline, current) pair; the verdict rule is applied later."""
    out: list[Evidence] = []
    for i, ref in enumerate(base):
        for j, cur in enumerate(current):
            if disjoint and i == j:
                continue
            if normalised:
                c = compare_timings(cur, ref, resamples=400)
            else:
                c = compare_timings(cur.model, ref.model, resamples=400)
            out.append((c.slowdown, c.p_slower, c.p_faster))
    return out


def _rates(
    scenario: str, values: str, same: list[Evidence], slowed: list[Evidence],
    tolerance: float, alpha: float,
) -> Rates:
    def regressed(e: Evidence) -> bool:
        return decide(e[0], e[1], e[2], tolerance=tolerance, alpha=alpha) == "regressed"

    fa = sum(regressed(e) for e in same)
    det = sum(regressed(e) for e in slowed)
    return Rates(
        scenario=scenario, values=values, tolerance=tolerance, alpha=alpha,
        false_alarms=fa, unchanged_pairs=len(same), detections=det, slowed_pairs=len(slowed),
        false_alarm_rate=fa / len(same), detection_rate=det / len(slowed),
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=20, help="sessions per variant and load")
    parser.add_argument("--rounds", type=int, default=100, help="rounds per session")
    parser.add_argument("--slowdown", type=float, default=0.15, help="injected slowdown")
    parser.add_argument("--tolerances", default="0.05,0.08",
                        help="comma-separated tolerances to evaluate (the gate default is 0.08)")
    parser.add_argument("--alphas", default=f"{DEFAULT_ALPHA},1.0",
                        help="significance levels to evaluate (1.0: the point estimate alone)")
    parser.add_argument("--input-size", type=int, default=64)
    parser.add_argument("--no-load", action="store_true", help="skip the loaded phase")
    parser.add_argument("--json", help="also write the figures to this file")
    args = parser.parse_args(argv)
    tolerances = [float(t) for t in args.tolerances.split(",")]
    alphas = [float(a) for a in args.alphas.split(",")]
    started = time.time()

    torch.set_num_threads(1)
    model = _bench_model()
    slowed = SlowedDown(model, args.slowdown).eval()
    x = torch.randn(1, 3, args.input_size, args.input_size)

    def run_plain() -> object:
        with torch.no_grad():
            return model(x)

    def run_slowed() -> object:
        with torch.no_grad():
            return slowed(x)

    fns = {"unchanged": run_plain, "slowed": run_slowed}
    print(f"# {' '.join(shlex.quote(a) for a in [sys.executable, *sys.argv])}")
    print(f"# torch {torch.__version__}, {platform.processor() or platform.machine()}, "
          f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f} at start")
    phases: dict[str, dict[str, list[NormalisedTiming]]] = {}
    phases["idle"] = _sessions(fns, args.sessions, args.rounds)
    print(f"# idle phase done in {time.time() - started:.0f} s")
    if not args.no_load:
        ctx = mp.get_context("spawn")
        t0 = time.time()
        # Generous bound: the loaded phase takes about as long as the idle one, plus start-up.
        loader = ctx.Process(target=_spin, args=(time.time() + 4 * (t0 - started) + 60,),
                             daemon=True)
        loader.start()
        time.sleep(1.0)
        try:
            phases["loaded"] = _sessions(fns, args.sessions, args.rounds)
        finally:
            loader.terminate()
            loader.join(timeout=10)
        print(f"# loaded phase done in {time.time() - t0:.0f} s")

    for name, sessions in phases.items():
        ratio_medians = sorted(s.normalised for s in sessions["unchanged"])
        ms = sorted(s.model.median for s in sessions["unchanged"])
        cal = sorted(s.calibration.median for s in sessions["unchanged"])
        print(f"# {name}: model median {ms[0]:.3f}..{ms[-1]:.3f} ms, calibration "
              f"{cal[0]:.3f}..{cal[-1]:.3f} ms, normalised "
              f"{ratio_medians[0]:.3f}..{ratio_medians[-1]:.3f}"
              " (range over sessions)")

    scenarios: list[tuple[str, str, str, bool]] = [("idle vs idle", "idle", "idle", True)]
    if "loaded" in phases:
        scenarios += [("loaded vs loaded", "loaded", "loaded", True),
                      ("idle baseline, loaded run", "idle", "loaded", False)]
    results: list[Rates] = []
    for label, base_phase, cur_phase, disjoint in scenarios:
        base = phases[base_phase]["unchanged"]
        for normalised in (True, False):
            values = "normalised" if normalised else "raw ms"
            same = _evidence(base, phases[cur_phase]["unchanged"], normalised, disjoint)
            slowed_ev = _evidence(base, phases[cur_phase]["slowed"], normalised, False)
            for alpha in alphas:
                for tol in tolerances:
                    results.append(_rates(label, values, same, slowed_ev, tol, alpha))

    print()
    print(f"injected slowdown +{args.slowdown * 100:.0f} %, {args.sessions} sessions x "
          f"{args.rounds} rounds per variant; gate defaults: tolerance {DEFAULT_TOLERANCE}, "
          f"alpha {DEFAULT_ALPHA}")
    header = (f"{'scenario':<27} {'values':<10} {'alpha':>5} {'tol':>5} {'false alarms':>18} "
              f"{'detected':>18}")
    print(header)
    print("-" * len(header))
    for r in results:
        print(f"{r.scenario:<27} {r.values:<10} {r.alpha:>5.2f} {r.tolerance * 100:>4.0f}% "
              f"{r.false_alarm_rate * 100:>6.2f}% ({r.false_alarms:>3}/{r.unchanged_pairs:<4}) "
              f"{r.detection_rate * 100:>6.2f}% ({r.detections:>3}/{r.slowed_pairs:<4})")
    print(f"\ntargets: false alarms <= 1 %, detection >= 95 %. Took {time.time() - started:.0f} s.")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump({"args": vars(args), "results": [asdict(r) for r in results]}, fh, indent=2)
            fh.write("\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
