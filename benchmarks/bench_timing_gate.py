"""False-alarm and detection rates of the latency gate at its defaults, with and without load.

What it does:

1. Builds a small CNN (single-threaded, ~0.4 ms per forward) and a copy whose forward is
   slowed by a calibrated busy-wait: after the real forward it spins for ``--slowdown`` times
   the duration of *that very call*, so the injected cost stays a fixed fraction of the
   model's time even when load slows the model down.
2. Records ``--sessions`` measurement sessions of each variant (``measure_normalised``: the
   model rotated with the calibration workloads, ``--max-rounds`` rounds each), first with
   the machine as it is ("idle"), then with a background process spinning on a core
   ("loaded"; bounded in time, it exits on its own).
3. Replays the gate on every (baseline, current) pair, as ``measure_forward_sequential``
   runs it: a stored baseline is a whole unchanged session (``--max-rounds`` rounds, as
   recorded without a baseline), and the current run is ``compare_sequential`` fed from a
   recorded session (``--rounds`` rounds, more only while undecided, at most
   ``--max-rounds``; 1000 bootstrap resamples instead of the plugin's 2000, for time).
   Every unchanged session serves as baseline against every *other* unchanged session
   (false alarms) and every slowed session (detections). Scenarios: idle/idle,
   loaded/loaded, idle baseline + loaded run, and loaded baseline + idle run.

Pairs share sessions, so they are not independent; the rates are estimates, not exact
probabilities. Sessions of one process stand in for runs on different days. Timings on a
shared machine are noisy by nature: rerun it where it matters.

Reproduce: python benchmarks/bench_timing_gate.py --quick      (about 2 minutes on 2 cores)
           python benchmarks/bench_timing_gate.py              (more sessions, raw-ms contrast)
           ... --save s.json / --load s.json                   (keep / replay recorded sessions)
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
    DEFAULT_MAX_ROUNDS_FACTOR,
    DEFAULT_TOLERANCE,
    NormalisedTiming,
    compare_sequential,
    compare_timings,
)

DEFAULT_ROUNDS = 100  # the plugin's timing_rounds default (settings.DEFAULT_TIMING_ROUNDS)


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
    while time.time() < deadline:
        pass


@dataclass
class Rates:
    scenario: str
    values: str  # "normalised, sequential" (the gate) or "raw ms" (contrast)
    false_alarms: int
    unchanged_pairs: int
    detections: int
    slowed_pairs: int
    false_alarm_rate: float
    detection_rate: float
    mean_rounds: float  # rounds the current run measured, on average


Sessions = dict[str, dict[str, list[NormalisedTiming]]]  # phase -> variant -> sessions


def _record(
    fns: dict[str, Callable[[], object]], count: int, rounds: int
) -> dict[str, list[NormalisedTiming]]:
    from pytest_modelprof.runtime.noise import measure_normalised

    out: dict[str, list[NormalisedTiming]] = {name: [] for name in fns}
    names = list(fns)
    for k in range(count):
        for name in names if k % 2 == 0 else names[::-1]:
            out[name].append(measure_normalised(fns[name], rounds=rounds, warmup=3))
    return out


def _rounds(t: NormalisedTiming, start: int, stop: int) -> NormalisedTiming:
    return NormalisedTiming.from_parts(
        t.model.samples[start:stop], [p[start:stop] for p in t.parts_ms],
        quantile=t.quantile, timer=t.model.timer, calibration_version=t.calibration_version,
    )


def _gate(baseline: NormalisedTiming, session: NormalisedTiming, rounds: int,
          max_rounds: int) -> tuple[str, int]:
    """The plugin's sequential measurement and verdict, fed from a recorded session."""
    used = [0]

    def measure(n: int) -> NormalisedTiming:
        part = _rounds(session, used[0], used[0] + n)
        used[0] += n
        return part

    timing, comparison = compare_sequential(
        baseline, measure, rounds=rounds, max_rounds=max_rounds, resamples=1000
    )
    return comparison.verdict, timing.rounds


def _judge(stored: NormalisedTiming, session: NormalisedTiming, rounds: int, max_rounds: int,
           raw: bool) -> tuple[str, int]:
    """(verdict, rounds measured): the gate, or raw milliseconds at fixed rounds for contrast."""
    if raw:
        return compare_timings(session.head(rounds).model, stored.model,
                               resamples=1000).verdict, rounds
    return _gate(stored, session, rounds, max_rounds)


def _scenario(
    label: str, base: Sequence[NormalisedTiming], same: Sequence[NormalisedTiming],
    slowed: Sequence[NormalisedTiming], same_phase: bool, rounds: int, max_rounds: int,
    raw: bool, baseline_rounds: int,
) -> Rates:
    fa = det = n_same = n_slow = used = 0
    for i, ref in enumerate(base):
        stored = ref.head(baseline_rounds)
        for j, cur in enumerate(same):
            if same_phase and i == j:
                continue
            verdict, n = _judge(stored, cur, rounds, max_rounds, raw)
            fa += verdict == "regressed"
            n_same += 1
            used += n
        for cur in slowed:
            verdict, n = _judge(stored, cur, rounds, max_rounds, raw)
            det += verdict == "regressed"
            n_slow += 1
            used += n
    return Rates(
        scenario=label, values="raw ms" if raw else "normalised, sequential",
        false_alarms=fa, unchanged_pairs=n_same, detections=det, slowed_pairs=n_slow,
        false_alarm_rate=fa / n_same, detection_rate=det / n_slow,
        mean_rounds=used / (n_same + n_slow),
    )


def _measure_phases(args: argparse.Namespace, started: float) -> Sessions:
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
    phases: Sessions = {"idle": _record(fns, args.sessions, args.max_rounds)}
    print(f"# idle phase done in {time.time() - started:.0f} s", flush=True)
    if not args.no_load:
        ctx = mp.get_context("spawn")
        t0 = time.time()
        # Generous bound: the loaded phase takes up to ~3x the idle one, plus start-up.
        loader = ctx.Process(target=_spin, args=(time.time() + 4 * (t0 - started) + 60,),
                             daemon=True)
        loader.start()
        time.sleep(1.0)
        try:
            phases["loaded"] = _record(fns, args.sessions, args.max_rounds)
        finally:
            loader.terminate()
            loader.join(timeout=10)
        print(f"# loaded phase done in {time.time() - t0:.0f} s", flush=True)
    return phases


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--quick", action="store_true",
                        help="10 sessions per variant and load, no raw-ms contrast (~2 min)")
    parser.add_argument("--sessions", type=int, default=None,
                        help="sessions per variant and load (default 16, --quick 10)")
    parser.add_argument("--rounds", type=int, default=DEFAULT_ROUNDS,
                        help="rounds of a stored baseline and of a run's first look")
    parser.add_argument("--max-rounds", type=int, default=None,
                        help=f"most rounds a run measures (default {DEFAULT_MAX_ROUNDS_FACTOR}x)")
    parser.add_argument("--baseline-rounds", type=int, default=None,
                        help="rounds of a stored baseline (default: --max-rounds, as the "
                             "plugin records a baseline)")
    parser.add_argument("--slowdown", type=float, default=0.15, help="injected slowdown")
    parser.add_argument("--input-size", type=int, default=64)
    parser.add_argument("--no-load", action="store_true", help="skip the loaded phase")
    parser.add_argument("--save", help="write the recorded sessions to this JSON file")
    parser.add_argument("--load", help="replay sessions from this JSON file (no measuring)")
    parser.add_argument("--json", help="also write the figures to this file")
    args = parser.parse_args(argv)
    if args.sessions is None:
        args.sessions = 10 if args.quick else 16
    if args.max_rounds is None:
        args.max_rounds = DEFAULT_MAX_ROUNDS_FACTOR * args.rounds
    if args.baseline_rounds is None:
        args.baseline_rounds = args.max_rounds
    started = time.time()

    print(f"# {' '.join(shlex.quote(a) for a in [sys.executable, *sys.argv])}")
    print(f"# torch {torch.__version__}, {platform.processor() or platform.machine()}, "
          f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f} at start", flush=True)
    if args.load:
        with open(args.load, encoding="utf-8") as fh:
            raw = json.load(fh)
        phases: Sessions = {
            ph: {v: [NormalisedTiming.model_validate(s) for s in ss] for v, ss in vs.items()}
            for ph, vs in raw.items()
        }
    else:
        phases = _measure_phases(args, started)
    if args.save:
        with open(args.save, "w", encoding="utf-8") as fh:
            json.dump({ph: {v: [s.model_dump(mode="json") for s in ss] for v, ss in vs.items()}
                       for ph, vs in phases.items()}, fh)

    for name, sessions in phases.items():
        ms = sorted(s.head(args.rounds).fast_ms for s in sessions["unchanged"])
        norm = sorted(s.head(args.rounds).normalised for s in sessions["unchanged"])
        print(f"# {name}: model q10 {ms[0]:.3f}..{ms[-1]:.3f} ms, normalised "
              f"{norm[0]:.3f}..{norm[-1]:.3f} (range over sessions)")

    scenarios = [("idle vs idle", "idle", "idle")]
    if "loaded" in phases:
        scenarios += [("loaded vs loaded", "loaded", "loaded"),
                      ("idle baseline, loaded run", "idle", "loaded"),
                      ("loaded baseline, idle run", "loaded", "idle")]
    results: list[Rates] = []
    for raw in (False,) if args.quick else (False, True):
        for label, base_phase, cur_phase in scenarios:
            results.append(_scenario(
                label, phases[base_phase]["unchanged"], phases[cur_phase]["unchanged"],
                phases[cur_phase]["slowed"], base_phase == cur_phase, args.rounds,
                args.max_rounds, raw, args.baseline_rounds,
            ))

    print()
    print(f"injected slowdown +{args.slowdown * 100:.0f} %, {args.sessions} sessions per "
          f"variant and load; gate defaults: tolerance {DEFAULT_TOLERANCE * 100:.0f} %, "
          f"alpha {DEFAULT_ALPHA}, {args.rounds} rounds (up to {args.max_rounds}), "
          f"baselines of {args.baseline_rounds} rounds")
    header = (f"{'scenario':<27} {'values':<23} {'false alarms':>18} {'detected':>18} "
              f"{'rounds':>6}")
    print(header)
    print("-" * len(header))
    for r in results:
        print(f"{r.scenario:<27} {r.values:<23} "
              f"{r.false_alarm_rate * 100:>6.2f}% ({r.false_alarms:>3}/{r.unchanged_pairs:<4}) "
              f"{r.detection_rate * 100:>6.2f}% ({r.detections:>3}/{r.slowed_pairs:<4}) "
              f"{r.mean_rounds:>6.0f}")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump({"args": vars(args), "results": [asdict(r) for r in results]}, fh, indent=2)
            fh.write("\n")
    gate = [r for r in results if r.values != "raw ms"]
    print(f"\ntargets: false alarms <= 1 %, detection >= 95 %. Took {time.time() - started:.0f} s.")
    print(f"gate defaults: worst false alarms "
          f"{max(r.false_alarm_rate for r in gate) * 100:.2f} %, worst detection "
          f"{min(r.detection_rate for r in gate) * 100:.2f} %")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
