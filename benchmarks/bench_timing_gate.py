"""False-alarm and detection rates of the latency gate at its defaults, with and without load.

What it does:

1. Builds a small CNN (single-threaded, ~0.4 ms per forward) and a copy whose forward is
   slowed by a calibrated busy-wait: after the real forward it spins for ``--slowdown`` times
   the duration of *that very call*, so the injected cost stays a fixed fraction of the
   model's time even when load slows the model down.
2. Records ``--sessions`` measurement sessions of each variant (``measure_normalised``: the
   model rotated with the calibration workloads, ``--max-rounds`` rounds each: the run cap,
   so an undecided run can be replayed to its end), first with
   the machine as it is ("idle"), then with a background process spinning on a core
   ("loaded"), then with that one and a second process copying 64 MiB buffers, which eats
   memory bandwidth and the shared cache ("loaded+memory"). The helpers are bounded in
   time: they exit on their own.
3. Replays the gate on every (baseline, current) pair, as ``measure_forward_sequential``
   runs it: a stored baseline is the first ``--baseline-rounds`` rounds of an unchanged
   session (400: 4 x ``--rounds``, as the plugin records a baseline), and the current run is
   ``compare_sequential`` fed from a
   recorded session (``--rounds`` rounds, more only while undecided, at most
   ``--max-rounds``; 2000 bootstrap resamples, as the plugin's verdict uses; 5 warm-up calls
   before each session, as ``measure_forward_sequential`` makes).
   Every unchanged session serves as baseline against every *other* unchanged session
   (false alarms) and every slowed session (detections). Scenarios: idle/idle,
   loaded/loaded, idle baseline + loaded run, loaded baseline + idle run,
   loaded+memory/loaded+memory and idle baseline + loaded+memory run.
4. Reports each rate with its Wilson 95 % interval and whether every scenario meets the
   target: false alarms <= 1 % with the interval's upper end <= 2 %, detection >= 95 %.
   ``--quick`` records 18 sessions per variant and phase: 306-324 pairs per rate and
   scenario, where 90 pairs (10 sessions) made one alarm read 1.1 %.

Pairs share sessions, so they are not independent: the intervals are narrower than the
uncertainty they stand for. Sessions of one process stand in for runs on different days.
Timings on a shared machine are noisy by nature: rerun it where it matters.

``--paired`` judges the paired mode instead (``--modelprof-timing-base``): timing processes
(:class:`~pytest_modelprof.history.paired.TimingProcess`, a fresh one for every
``--tests-per-process`` tests, as a pytest session starts one for all its timed tests) build the
model for both sides, the head slowed by +15 %, +8 % or 0 %, and time them in ABBA rounds
(:func:`~pytest_modelprof.history.paired.time_paired`, the plugin's code) with one busy process
beside them the whole time. ``--sessions`` unchanged-head tests (``--quick``: 200, the fewest
whose Wilson upper end can be <= 2 %) and ``--slowed-sessions`` tests of each slowed head,
shuffled together. False alarms are ``regressed`` verdicts at 0 %, detection ``regressed`` at
+15 %; at +8 % (the limit itself) the share called regressed is shown. After each timing
process, one stored-baseline test of each head, in this process, gives the cost ratio per timed
test and head under the same load; the timing process's start is timed apart (once per session).
``--model resnet18 --input-size 224`` times a torchvision model instead of the small CNN;
``--block-ms``, ``--first`` and ``--step`` sweep the paired mode's constants. ``--save`` keeps
every test's verdict, estimate and process.

Reproduce: python benchmarks/bench_timing_gate.py --quick   (26-33 min on 2 shared cores, load 2-9)
           python benchmarks/bench_timing_gate.py --paired --quick   (3 min quiet, 5-6 min loaded)
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

from pytest_modelprof.history.paired import BLOCK_MS, PAIRED_FIRST, PAIRED_STEP
from pytest_modelprof.runtime.calibration import DEFAULT_BASELINE_ROUNDS_FACTOR
from pytest_modelprof.runtime.noise import (
    DEFAULT_ALPHA,
    DEFAULT_MAX_ROUNDS_FACTOR,
    DEFAULT_TOLERANCE,
    NormalisedTiming,
    compare_sequential,
    compare_timings,
)

DEFAULT_ROUNDS = 100  # the plugin's timing_rounds default (settings.DEFAULT_TIMING_ROUNDS)
# 18 sessions give 18 * 17 = 306 unchanged pairs within a phase (324 across phases, 324 slowed):
# enough for a 95 % interval to tell 1 % from 2 %; 10 sessions (90 pairs) could not.
QUICK_SESSIONS = 18
FULL_SESSIONS = 24


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


def paired_model(slowdown: float = 0.0, arch: str = "cnn") -> nn.Module:
    """The benchmark model for one side of a paired session (built by name in its process):
    the small CNN, or the torchvision model ``arch`` (random weights)."""
    if arch == "cnn":
        inner = _bench_model()
    else:
        import torchvision

        torch.manual_seed(0)
        inner = torchvision.models.get_model(arch, weights=None)
    # Both sides wrapped, so the wrapper's own cost is on both and only ``slowdown`` differs.
    return SlowedDown(inner, slowdown).eval()


def _spin(deadline: float) -> None:
    """Background load: a pure-Python busy loop that stops by itself at ``deadline``."""
    while time.time() < deadline:
        pass


def _stream(deadline: float, mib: int = 64) -> None:
    """Memory-bandwidth pressure: copies ``mib`` MiB (far beyond the caches) until ``deadline``."""
    src, dst = bytearray(mib << 20), bytearray(mib << 20)
    view = memoryview(dst)
    while time.time() < deadline:
        view[:] = src  # a plain memcpy: it streams through RAM and evicts the shared cache


def wilson(k: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """The Wilson score interval of a rate of ``k`` in ``n`` (95 % for ``z=1.96``).

    Unlike ``k/n +- z*sqrt(...)`` it stays inside [0, 1] and is not empty at ``k=0``:
    0 alarms in 306 pairs still allows up to 1.24 %.
    """
    if n <= 0:
        return 0.0, 1.0
    p, z2 = k / n, z * z
    centre = (p + z2 / (2 * n)) / (1 + z2 / n)
    half = z / (1 + z2 / n) * ((p * (1 - p) / n + z2 / (4 * n * n)) ** 0.5)
    return max(0.0, centre - half), min(1.0, centre + half)


#: What the gate must reach in every scenario: false alarms <= 1 % with the upper
#: end of the 95 % interval <= 2 %, and detection of the injected slowdown >= 95 %.
TARGET_FALSE_ALARMS = 0.01
TARGET_FALSE_ALARMS_UPPER = 0.02
TARGET_DETECTION = 0.95


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
    false_alarm_ci: tuple[float, float] = (0.0, 1.0)  # Wilson 95 %
    detection_ci: tuple[float, float] = (0.0, 1.0)
    undecided: int = 0  # pairs whose run ended inconclusive (a warning, not a verdict)

    @property
    def meets_target(self) -> bool:
        return (
            self.false_alarm_rate <= TARGET_FALSE_ALARMS
            and self.false_alarm_ci[1] <= TARGET_FALSE_ALARMS_UPPER
            and self.detection_rate >= TARGET_DETECTION
        )


Sessions = dict[str, dict[str, list[NormalisedTiming]]]  # phase -> variant -> sessions


def _record(
    fns: dict[str, Callable[[], object]], count: int, rounds: int
) -> dict[str, list[NormalisedTiming]]:
    from pytest_modelprof.runtime.calibration import measure_normalised

    out: dict[str, list[NormalisedTiming]] = {name: [] for name in fns}
    names = list(fns)
    for k in range(count):
        for name in names if k % 2 == 0 else names[::-1]:
            # warmup=5: what measure_forward_sequential gives every measurement.
            out[name].append(measure_normalised(fns[name], rounds=rounds, warmup=5))
    return out


def _rounds(t: NormalisedTiming, start: int, stop: int) -> NormalisedTiming:
    return NormalisedTiming.from_parts(
        t.model.samples[start:stop], [p[start:stop] for p in t.parts_ms],
        quantile=t.quantile, timer=t.model.timer, calibration_version=t.calibration_version,
    )


def _gate(baseline: NormalisedTiming, session: NormalisedTiming, rounds: int,
          max_rounds: int, resamples: int) -> tuple[str, int]:
    """The plugin's sequential measurement and verdict, fed from a recorded session."""
    used = [0]

    def measure(n: int) -> NormalisedTiming:
        part = _rounds(session, used[0], used[0] + n)
        used[0] += n
        return part

    timing, comparison = compare_sequential(
        baseline, measure, rounds=rounds, max_rounds=max_rounds, resamples=resamples
    )
    return comparison.verdict, timing.rounds


def _judge(stored: NormalisedTiming, session: NormalisedTiming, rounds: int, max_rounds: int,
           raw: bool, resamples: int) -> tuple[str, int]:
    """(verdict, rounds measured): the gate, or raw milliseconds at fixed rounds for contrast."""
    if raw:
        return compare_timings(session.head(rounds).model, stored.model,
                               resamples=resamples).verdict, rounds
    return _gate(stored, session, rounds, max_rounds, resamples)


def _scenario(
    label: str, base: Sequence[NormalisedTiming], same: Sequence[NormalisedTiming],
    slowed: Sequence[NormalisedTiming], same_phase: bool, rounds: int, max_rounds: int,
    raw: bool, baseline_rounds: int, resamples: int = 2000,
) -> Rates:
    fa = det = n_same = n_slow = used = undecided = 0
    stored = [ref.head(baseline_rounds) for ref in base]
    # The run outside, the baselines inside: the bootstrap of a run's rounds (and of each
    # baseline) stays in noise.py's cache, so a replay takes seconds, not minutes.
    for slow, runs in ((False, same), (True, slowed)):
        for j, cur in enumerate(runs):
            for i, ref in enumerate(stored):
                if same_phase and not slow and i == j:
                    continue
                verdict, n = _judge(ref, cur, rounds, max_rounds, raw, resamples)
                undecided += verdict == "inconclusive"
                used += n
                if slow:
                    det += verdict == "regressed"
                    n_slow += 1
                else:
                    fa += verdict == "regressed"
                    n_same += 1
    return Rates(
        scenario=label, values="raw ms" if raw else "normalised, sequential",
        false_alarms=fa, unchanged_pairs=n_same, detections=det, slowed_pairs=n_slow,
        false_alarm_rate=fa / n_same, detection_rate=det / n_slow,
        mean_rounds=used / (n_same + n_slow),
        false_alarm_ci=wilson(fa, n_same), detection_ci=wilson(det, n_slow),
        undecided=undecided,
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
    idle_s = time.time() - started
    print(f"# idle phase done in {idle_s:.0f} s", flush=True)
    if args.no_load:
        return phases
    # "loaded": one more process spinning on a core; "loaded+memory": that one plus a process
    # streaming memory (a busy neighbour and one that eats the memory bandwidth and the shared
    # cache). Each is stopped when its phase ends; the deadline only bounds a helper whose
    # parent died (a loaded phase takes up to ~4x the idle one on a busy machine).
    for phase, loads in (("loaded", (_spin,)), ("loaded+memory", (_spin, _stream))):
        ctx = mp.get_context("spawn")
        t0 = time.time()
        deadline = t0 + 8 * idle_s + 120
        helpers = [ctx.Process(target=f, args=(deadline,), daemon=True) for f in loads]
        for h in helpers:
            h.start()
        time.sleep(1.5)  # let them start (a spawned interpreter takes ~1 s)
        try:
            phases[phase] = _record(fns, args.sessions, args.max_rounds)
        finally:
            for h in helpers:
                h.terminate()
                h.join(timeout=10)
        print(f"# {phase} phase done in {time.time() - t0:.0f} s", flush=True)
    return phases


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--quick", action="store_true",
                        help=f"{QUICK_SESSIONS} sessions per variant and load (>= 300 pairs "
                             "per rate and scenario), no raw-ms contrast (sessions of the "
                             "run cap, 800 rounds)")
    parser.add_argument("--sessions", type=int, default=None,
                        help=f"sessions per variant and load (default {FULL_SESSIONS}, --quick "
                             f"{QUICK_SESSIONS})")
    parser.add_argument("--rounds", type=int, default=DEFAULT_ROUNDS,
                        help="rounds of a run's first look (timing_rounds)")
    parser.add_argument("--max-rounds", type=int, default=None,
                        help=f"most rounds a run measures, and the rounds each session records "
                             f"(default {DEFAULT_MAX_ROUNDS_FACTOR}x --rounds)")
    parser.add_argument("--baseline-rounds", type=int, default=None,
                        help=f"rounds of a stored baseline, the head of a session (default "
                             f"{DEFAULT_BASELINE_ROUNDS_FACTOR}x --rounds, as the plugin records "
                             "one, at most --max-rounds)")
    parser.add_argument("--slowdown", type=float, default=0.15, help="injected slowdown")
    parser.add_argument("--input-size", type=int, default=64)
    parser.add_argument("--resamples", type=int, default=2000,
                        help="bootstrap resamples per comparison (2000: the plugin's)")
    parser.add_argument("--no-load", action="store_true", help="skip the loaded phase")
    parser.add_argument("--save", help="write the recorded sessions to this JSON file")
    parser.add_argument("--load", help="replay sessions from this JSON file (no measuring)")
    parser.add_argument("--json", help="also write the figures to this file")
    parser.add_argument("--paired", action="store_true",
                        help="judge the paired mode (base and head in one timing process, ABBA)")
    parser.add_argument("--slowed-sessions", type=int, default=None,
                        help="--paired: tests of each slowed head (default 80, --quick 40); "
                             "--sessions sets the unchanged-head tests (default 400, --quick 200)")
    parser.add_argument("--tests-per-process", type=int, default=10,
                        help="--paired: timed tests per timing process (a pytest session's "
                             "share), default 10")
    parser.add_argument("--seed", type=int, default=0,
                        help="--paired: seed of the order the tests are shuffled into")
    parser.add_argument("--model", default="cnn",
                        help="--paired: the model, 'cnn' (default: a small CNN that builds in "
                             "about a millisecond) or a torchvision name, e.g. resnet18 (with "
                             "--input-size 224)")
    parser.add_argument("--block-ms", type=float, default=BLOCK_MS,
                        help=f"--paired: a block's length in ms (default {BLOCK_MS:g}, the "
                             "plugin's)")
    parser.add_argument("--first", type=int, default=PAIRED_FIRST,
                        help=f"--paired: rounds before the first look (default {PAIRED_FIRST})")
    parser.add_argument("--step", type=int, default=PAIRED_STEP,
                        help=f"--paired: rounds between later looks (default {PAIRED_STEP})")
    args = parser.parse_args(argv)
    if args.paired:
        from bench_timing_paired import run_paired

        return run_paired(args)
    if args.sessions is None:
        args.sessions = QUICK_SESSIONS if args.quick else FULL_SESSIONS
    if args.max_rounds is None:
        args.max_rounds = DEFAULT_MAX_ROUNDS_FACTOR * args.rounds
    if args.baseline_rounds is None:  # a baseline is a session's head: no longer than one
        args.baseline_rounds = min(DEFAULT_BASELINE_ROUNDS_FACTOR * args.rounds, args.max_rounds)
    if not args.rounds <= args.baseline_rounds <= args.max_rounds:
        parser.error(f"need --rounds <= --baseline-rounds <= --max-rounds, got {args.rounds}, "
                     f"{args.baseline_rounds} and {args.max_rounds}")
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
        shortest = min(s.rounds for vs in phases.values() for ss in vs.values() for s in ss)
        if shortest < args.max_rounds:
            parser.error(f"{args.load} holds sessions of {shortest} rounds, fewer than "
                         f"--max-rounds {args.max_rounds}: pass --max-rounds {shortest} to "
                         "replay them with a smaller cap")
    else:
        phases = _measure_phases(args, started)
    if args.save:
        with open(args.save, "w", encoding="utf-8") as fh:
            json.dump({ph: {v: [s.model_dump(mode="json") for s in ss] for v, ss in vs.items()}
                       for ph, vs in phases.items()}, fh)

    for name, sessions in phases.items():
        ms = sorted(s.head(args.rounds).fast_ms for s in sessions["unchanged"])
        norm = sorted(s.head(args.rounds).normalised for s in sessions["unchanged"])
        print(f"# {name}: model (fastest 10 %) {ms[0]:.3f}..{ms[-1]:.3f} ms, normalised "
              f"{norm[0]:.3f}..{norm[-1]:.3f} (range over sessions)")

    scenarios = [("idle vs idle", "idle", "idle")]
    if "loaded" in phases:
        scenarios += [("loaded vs loaded", "loaded", "loaded"),
                      ("idle baseline, loaded run", "idle", "loaded"),
                      ("loaded baseline, idle run", "loaded", "idle")]
    if "loaded+memory" in phases:
        scenarios += [("loaded+memory vs same", "loaded+memory", "loaded+memory"),
                      ("idle base, loaded+memory run", "idle", "loaded+memory")]
    results: list[Rates] = []
    for raw in (False,) if args.quick else (False, True):
        for label, base_phase, cur_phase in scenarios:
            results.append(_scenario(
                label, phases[base_phase]["unchanged"], phases[cur_phase]["unchanged"],
                phases[cur_phase]["slowed"], base_phase == cur_phase, args.rounds,
                args.max_rounds, raw, args.baseline_rounds, args.resamples,
            ))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump({"args": vars(args), "results": [asdict(r) for r in results]}, fh, indent=2)
            fh.write("\n")
    print()
    print("\n".join(_report(results, args, time.time() - started)))
    return 0


def _pct(rate: float) -> str:
    return f"{rate * 100:.2f}"


def _report(results: Sequence[Rates], args: argparse.Namespace, took_s: float) -> list[str]:
    """The table, the verdict on the targets, and the last line scripts read."""
    lines = [
        f"injected slowdown +{args.slowdown * 100:.0f} %, {args.sessions} sessions per variant "
        f"and load; gate defaults: tolerance {DEFAULT_TOLERANCE * 100:.0f} %, alpha "
        f"{DEFAULT_ALPHA}, {args.rounds} rounds (up to {args.max_rounds}), baselines of "
        f"{args.baseline_rounds} rounds. Rates with their Wilson 95 % interval; pairs share "
        "sessions, so the interval is a lower bound on the uncertainty.",
    ]
    header = (f"{'scenario':<29} {'values':<9} {'false alarms [95 % CI]':<31} "
              f"{'+15 % detected [95 % CI]':<33} {'undecided':>9} {'rounds':>6}  target")
    lines += [header, "-" * len(header)]
    for r in results:
        fa_lo, fa_hi = r.false_alarm_ci
        det_lo, det_hi = r.detection_ci
        fa = (f"{_pct(r.false_alarm_rate)} % ({r.false_alarms}/{r.unchanged_pairs}) "
              f"[{_pct(fa_lo)}, {_pct(fa_hi)}]")
        det = (f"{_pct(r.detection_rate)} % ({r.detections}/{r.slowed_pairs}) "
               f"[{_pct(det_lo)}, {_pct(det_hi)}]")
        target = "" if r.values == "raw ms" else ("met" if r.meets_target else "MISSED")
        lines.append(f"{r.scenario:<29} {'raw ms' if r.values == 'raw ms' else 'gate':<9} "
                     f"{fa:<31} {det:<33} {r.undecided:>9} {r.mean_rounds:>6.0f}  {target}")
    gate = [r for r in results if r.values != "raw ms"]
    missed = [r.scenario for r in gate if not r.meets_target]
    lines.append("")
    lines.append(
        f"targets: false alarms <= {TARGET_FALSE_ALARMS * 100:.0f} % (upper end of the 95 % "
        f"interval <= {TARGET_FALSE_ALARMS_UPPER * 100:.0f} %), detection >= "
        f"{TARGET_DETECTION * 100:.0f} %: met in {len(gate) - len(missed)} of {len(gate)} "
        f"scenarios{' (missed: ' + '; '.join(missed) + ')' if missed else ''}. "
        f"Took {took_s:.0f} s, {time.process_time():.0f} s of CPU in this process (the load "
        "helpers' not counted)."
    )
    lines.append(
        f"gate defaults: worst false alarms {_pct(max(r.false_alarm_rate for r in gate))} %, "
        f"worst detection {_pct(min(r.detection_rate for r in gate))} %"
    )
    return lines


if __name__ == "__main__":
    raise SystemExit(main())
