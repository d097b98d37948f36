"""The paired mode of ``bench_timing_gate.py --paired``: base and head in one process, ABBA.

Kept apart from the stored-baseline benchmark it extends; ``bench_timing_gate.py`` calls
:func:`run_paired` with its parsed arguments.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from bench_timing_gate import _bench_model, _pct, _spin, wilson

from pytest_modelprof.history.paired import PAIRED_FIRST, PAIRED_STEP, TimingProcess, time_paired
from pytest_modelprof.runtime.noise import DEFAULT_TOLERANCE

QUICK_PAIRED_SESSIONS = 20
FULL_PAIRED_SESSIONS = 60
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
        {"base": {"kwargs": {"slowdown": 0.0}}, "head": {"kwargs": {"slowdown": slowdown}}},
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
    )
    return comparison.verdict, comparison.slowdown, timing.rounds, time.perf_counter() - t0


def _stored_test(args: argparse.Namespace) -> Callable[[], float]:
    """What one stored-baseline timed test costs: the plugin's sequential measurement against a
    baseline of 4 x rounds (measured here, once), single-threaded in this process; returns a
    call that runs one such test and gives its wall seconds."""
    import torch

    from pytest_modelprof.runtime.calibration import (
        measure_forward_normalised,
        measure_forward_sequential,
    )

    torch.set_num_threads(1)
    model = _bench_model()
    x = torch.randn(1, 3, args.input_size, args.input_size)
    baseline = measure_forward_normalised(model, x, rounds=4 * args.rounds)

    def one() -> float:
        t0 = time.perf_counter()
        measure_forward_sequential(model, x, baseline, rounds=args.rounds)
        return time.perf_counter() - t0

    return one


def run_paired(args: argparse.Namespace) -> int:
    """Record and judge paired sessions; print the table and the last line scripts read."""
    sessions = args.sessions or (QUICK_PAIRED_SESSIONS if args.quick else FULL_PAIRED_SESSIONS)
    started = time.time()
    print(f"# {' '.join([sys.executable, *sys.argv])}")
    print(
        f"# {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f} at start; "
        f"{sessions} paired sessions per slowdown, one busy process beside them; "
        f"--rounds {args.rounds} (first look after {min(PAIRED_FIRST, args.rounds)} rounds, "
        f"then every {PAIRED_STEP})",
        flush=True,
    )
    ctx = mp.get_context("spawn")
    busy = ctx.Process(target=_spin, args=(time.time() + 4 * 3600,), daemon=True)
    busy.start()
    results: dict[float, list[tuple[str, float, int, float]]] = {s: [] for s in SLOWDOWNS}
    stored_test = _stored_test(args)
    stored: list[float] = []
    with tempfile.TemporaryDirectory(prefix="bench-paired-") as tmp:
        try:
            for k in range(sessions):
                # A fresh process per session, as a pytest session starts one: whatever luck
                # a process draws (its pages, its core) is drawn again each time.
                proc = _process(Path(tmp), f"session{k}")
                try:
                    for slowdown in SLOWDOWNS if k % 2 == 0 else SLOWDOWNS[::-1]:
                        results[slowdown].append(_session(proc, slowdown, args))
                finally:
                    proc.close()
                # A stored-baseline test in each session, so both modes see the same load.
                stored.append(stored_test())
                print(
                    f"# session {k + 1}/{sessions} done at {time.time() - started:.0f} s, "
                    f"load average {os.getloadavg()[0]:.2f}",
                    flush=True,
                )
            stored_s = sum(stored) / len(stored)
        finally:
            busy.terminate()
            busy.join(timeout=10)
    lines = [
        f"{'head slowed by':<15} {'called regressed [95 % CI]':<34} {'median estimate':>15} "
        f"{'rounds':>7} {'wall s':>7}"
    ]
    rates = {}
    for slowdown, rows in results.items():
        hits = sum(1 for r in rows if r[0] == "regressed")
        lo, hi = wilson(hits, len(rows))
        rates[slowdown] = (hits / len(rows), hi)
        est = sorted(r[1] for r in rows)[len(rows) // 2]
        lines.append(
            f"{f'+{slowdown * 100:.0f} %':<15} "
            f"{f'{_pct(hits / len(rows))} % ({hits}/{len(rows)}) [{_pct(lo)}, {_pct(hi)}]':<34} "
            f"{est * 100:>+14.1f}% {sum(r[2] for r in rows) / len(rows):>7.0f} "
            f"{sum(r[3] for r in rows) / len(rows):>7.2f}"
        )
    paired_s = sum(r[3] for rows in results.values() for r in rows) / sum(
        len(rows) for rows in results.values()
    )
    fa, fa_hi = rates[0.0]
    det = rates[0.15][0]
    met = fa <= 0.01 and fa_hi <= 0.02 and det >= 0.95
    print()
    print("\n".join(lines))
    print()
    print(
        f"targets (false alarms <= 1 %, upper end <= 2 %, detection >= 95 %): "
        f"{'met' if met else 'MISSED'}. Cost per timed test: paired {paired_s:.2f} s (both "
        f"sides, mean over all sessions), stored-baseline {stored_s:.2f} s (one test per session, "
        f"interleaved), ratio "
        f"{paired_s / stored_s:.2f}x. Took {time.time() - started:.0f} s."
    )
    print(f"load average at the end {os.getloadavg()[0]:.2f}")
    print(f"gate paired: worst false alarms {_pct(fa)} %, worst detection {_pct(det)} %")
    return 0
