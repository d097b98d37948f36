"""The paired mode of ``bench_timing_gate.py --paired``: base and head in one process, ABBA.

Kept apart from the stored-baseline benchmark it extends; ``bench_timing_gate.py`` calls
:func:`run_paired` with its parsed arguments.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import random
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from bench_timing_gate import _pct, _spin, paired_model, wilson

from pytest_modelprof.history.paired import TimingProcess, time_paired
from pytest_modelprof.runtime.noise import DEFAULT_TOLERANCE

#: Unchanged-head tests per run: 0 alarms in 200 puts the Wilson interval's upper end at 1.9 %,
#: the least that can show false alarms <= 1 % with the upper end <= 2 %.
QUICK_PAIRED_SESSIONS = 200
FULL_PAIRED_SESSIONS = 400
#: Tests of each slowed head per run (detection is judged at +15 %; +8 % is the limit itself).
QUICK_SLOWED_SESSIONS = 40
FULL_SLOWED_SESSIONS = 80
#: Timed tests per timing process, as one pytest session times all its tests in one process.
TESTS_PER_PROCESS = 10
SLOWDOWNS = (0.15, 0.08, 0.0)


def _process(folder: Path, name: str) -> TimingProcess:
    here = str(Path(__file__).resolve().parent)
    return TimingProcess(Path.cwd(), [here, *sys.path], folder / f"{name}.log")


def _session(
    proc: TimingProcess, slowdown: float, args: argparse.Namespace
) -> tuple[str, float, int, float]:
    """One timed test as the gate runs it: load both sides, then paired rounds to a verdict;
    (verdict, estimate, rounds, wall seconds)."""
    t0 = time.perf_counter()
    build_ms = proc.load(
        "bench_timing_gate:paired_model",
        {
            "base": {"kwargs": {"slowdown": 0.0, "arch": args.model}},
            "head": {"kwargs": {"slowdown": slowdown, "arch": args.model}},
        },
        input_shape=[1, 3, args.input_size, args.input_size],
        device="cpu",
    )
    timing, comparison = time_paired(
        proc,
        base_label="base",
        rounds=args.rounds,
        tolerance=DEFAULT_TOLERANCE,
        max_rounds=args.max_rounds,
        build_ms=build_ms,
        block_ms=args.block_ms,
        first=args.first,
        step=args.step,
    )
    return comparison.verdict, comparison.slowdown, timing.rounds, time.perf_counter() - t0


def _stored_test(args: argparse.Namespace) -> Callable[[float], float]:
    """What one stored-baseline timed test costs: the plugin's sequential measurement against a
    baseline of 4 x rounds of the unchanged model (measured here, once), single-threaded in this
    process; returns a call that runs one such test of the head slowed by its argument and
    gives its wall seconds."""
    import torch

    from pytest_modelprof.runtime.calibration import (
        measure_forward_normalised,
        measure_forward_sequential,
    )

    torch.set_num_threads(1)
    heads = {s: paired_model(s, args.model) for s in SLOWDOWNS}
    x = torch.randn(1, 3, args.input_size, args.input_size)
    baseline = measure_forward_normalised(heads[0.0], x, rounds=4 * args.rounds)

    def one(slowdown: float) -> float:
        t0 = time.perf_counter()
        measure_forward_sequential(
            heads[slowdown], x, baseline, rounds=args.rounds, max_rounds=args.max_rounds
        )
        return time.perf_counter() - t0

    return one


def _plan(unchanged: int, slowed: int, per_process: int, seed: int) -> list[list[float]]:
    """The slowdown of every test, shuffled (fixed seed) and cut into one list per process, so
    each process times a mix and no scenario owns the quiet or the busy minutes of a run."""
    tests = [0.0] * unchanged + [0.15] * slowed + [0.08] * slowed
    random.Random(seed).shuffle(tests)
    return [tests[i : i + per_process] for i in range(0, len(tests), per_process)]


def run_paired(args: argparse.Namespace) -> int:
    """Record and judge paired tests; print the table and the last line scripts read."""
    unchanged = args.sessions or (QUICK_PAIRED_SESSIONS if args.quick else FULL_PAIRED_SESSIONS)
    slowed = args.slowed_sessions or (QUICK_SLOWED_SESSIONS if args.quick else FULL_SLOWED_SESSIONS)
    plan = _plan(unchanged, slowed, args.tests_per_process, args.seed)
    started = time.time()
    print(f"# {' '.join([sys.executable, *sys.argv])}")
    print(
        f"# {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f} at start; model "
        f"{args.model} at {args.input_size}x{args.input_size}; "
        f"{unchanged} unchanged and {slowed} + {slowed} slowed paired tests in {len(plan)} "
        f"timing processes of up to {args.tests_per_process} tests, one busy process beside "
        f"them; --rounds {args.rounds} (first look after {min(args.first, args.rounds)} "
        f"rounds, then every {args.step}; blocks of {args.block_ms:g} ms)",
        flush=True,
    )
    ctx = mp.get_context("spawn")
    busy = ctx.Process(target=_spin, args=(time.time() + 4 * 3600,), daemon=True)
    busy.start()
    results: dict[float, list[tuple[str, float, int, float, int]]] = {s: [] for s in SLOWDOWNS}
    stored_test = _stored_test(args)
    stored: dict[float, list[float]] = {s: [] for s in SLOWDOWNS}
    loads: list[float] = []
    starts: list[float] = []
    with tempfile.TemporaryDirectory(prefix="bench-paired-") as tmp:
        try:
            for k, tests in enumerate(plan):
                # A fresh process per group of tests, as each pytest session starts one: whatever
                # luck a process draws (its pages, its core) is drawn again for the next group.
                proc = _process(Path(tmp), f"process{k}")
                try:
                    # The process's start (importing torch) comes once per session, not per
                    # test: an untimed load first, its wall time kept apart.
                    t0 = time.perf_counter()
                    proc.load(
                        "bench_timing_gate:paired_model",
                        {side: {"kwargs": {"arch": args.model}} for side in ("base", "head")},
                        input_shape=[1, 3, args.input_size, args.input_size],
                        device="cpu",
                    )
                    starts.append(time.perf_counter() - t0)
                    for slowdown in tests:
                        results[slowdown].append((*_session(proc, slowdown, args), k))
                finally:
                    proc.close()
                # A stored-baseline test of each head per process, so both modes see the
                # same load.
                for slowdown in SLOWDOWNS:
                    stored[slowdown].append(stored_test(slowdown))
                loads.append(os.getloadavg()[0])
                done = sum(len(t) for t in plan[: k + 1])
                print(
                    f"# process {k + 1}/{len(plan)}: {done} tests done at "
                    f"{time.time() - started:.0f} s, load average {loads[-1]:.2f}",
                    file=sys.stderr,
                    flush=True,
                )
        finally:
            busy.terminate()
            busy.join(timeout=10)
    lines = [
        f"{'head slowed by':<15} {'called regressed [95 % CI]':<36} {'median estimate':>15} "
        f"{'rounds':>7} {'paired s':>9} {'stored s':>9} {'ratio':>6}"
    ]
    rates = {}
    ratios = {}
    for slowdown, rows in results.items():
        hits = sum(1 for r in rows if r[0] == "regressed")
        lo, hi = wilson(hits, len(rows))
        rates[slowdown] = (hits / len(rows), hi)
        est = sorted(r[1] for r in rows)[len(rows) // 2]
        paired_s = sum(r[3] for r in rows) / len(rows)
        stored_s = sum(stored[slowdown]) / len(stored[slowdown])
        ratios[slowdown] = paired_s / stored_s
        lines.append(
            f"{f'+{slowdown * 100:.0f} %':<15} "
            f"{f'{_pct(hits / len(rows))} % ({hits}/{len(rows)}) [{_pct(lo)}, {_pct(hi)}]':<36} "
            f"{est * 100:>+14.1f}% {sum(r[2] for r in rows) / len(rows):>7.0f} "
            f"{paired_s:>9.2f} {stored_s:>9.2f} {ratios[slowdown]:>5.2f}x"
        )
    # The run's mix of tests, costed both ways: each test's paired wall time against the mean
    # stored-baseline test of its head.
    mix_paired = sum(r[3] for rows in results.values() for r in rows)
    mix_stored = sum(len(rows) * sum(stored[s]) / len(stored[s]) for s, rows in results.items())
    fa, fa_hi = rates[0.0]
    det = rates[0.15][0]
    met = fa <= 0.01 and fa_hi <= 0.02 and det >= 0.95
    alarm_processes = sorted({r[4] for r in results[0.0] if r[0] == "regressed"})
    unchanged_estimates = sorted(r[1] for r in results[0.0])
    print()
    print("\n".join(lines))
    print()
    print(
        f"unchanged head: estimates {unchanged_estimates[0] * 100:+.1f} % .. "
        f"{unchanged_estimates[-1] * 100:+.1f} %; false alarms in {len(alarm_processes)} of "
        f"{len(plan)} processes {alarm_processes or ''}(tests of one process share its luck, "
        "so the interval assumes more independence than there is)"
    )
    print(
        f"targets (false alarms <= 1 %, upper end <= 2 %, detection >= 95 %): "
        f"{'met' if met else 'MISSED'}. Cost per timed test, paired / stored-baseline (wall "
        f"time, both sides; one stored-baseline test of each head per process, interleaved): "
        f"worst head {max(ratios.values()):.2f}x, the run's mix {mix_paired / mix_stored:.2f}x; "
        f"once per session, the timing process's start {sum(starts) / len(starts):.2f} s. "
        f"Took {time.time() - started:.0f} s."
    )
    print(
        f"load average at the end {os.getloadavg()[0]:.2f} "
        f"(between processes: {min(loads):.2f} .. {max(loads):.2f})"
    )
    if args.save:
        Path(args.save).write_text(
            json.dumps(
                {
                    "argv": sys.argv,
                    "tests": [
                        {
                            "slowdown": s,
                            "verdict": r[0],
                            "estimate": r[1],
                            "rounds": r[2],
                            "wall_s": r[3],
                            "process": r[4],
                        }
                        for s, rows in results.items()
                        for r in rows
                    ],
                    "stored_s": {str(k): v for k, v in stored.items()},
                    "loads": loads,
                    "starts_s": starts,
                },
                indent=1,
            )
            + "\n"
        )
    print(f"gate paired: worst false alarms {_pct(fa)} %, worst detection {_pct(det)} %")
    return 0
