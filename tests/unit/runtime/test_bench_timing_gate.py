"""``benchmarks/bench_timing_gate.py``: enough pairs, intervals, the load scenarios, its last line.

The benchmark is run for real (a subprocess, as a user runs it) with a tiny CNN input and a
handful of rounds, so it takes seconds; the rates it measures that way mean nothing and no
test asserts them.
"""

from __future__ import annotations

import importlib.util
import json
import re
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

SCRIPT = Path(__file__).resolve().parents[3] / "benchmarks" / "bench_timing_gate.py"
LAST_LINE = re.compile(
    r"^gate defaults: worst false alarms (\d+\.\d\d) %, worst detection (\d+\.\d\d) %$"
)


def _bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_timing_gate", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while it loads
    try:
        spec.loader.exec_module(module)
    finally:
        del sys.modules[spec.name]
    return module


@pytest.mark.parametrize(
    ("k", "n", "low", "high"),
    [
        # k=0: [0, z^2/(n+z^2)] = [0, 3.8416/309.8416] = [0, 1.2399 %]
        (0, 306, 0.0, 0.012399),
        # k=1, n=306: centre (1/306 + 3.8416/612)/(1 + 3.8416/306) = 0.0094267;
        # half 1.96/1.012554*sqrt(0.0032680*0.9967320/306 + 3.8416/374544) = 0.0088496
        (1, 306, 0.000577, 0.018276),
        # k=n: the mirror image of k=0
        (324, 324, 1 - 3.8416 / 327.8416, 1.0),
    ],
)
def test_wilson_interval(k: int, n: int, low: float, high: float) -> None:
    got = _bench().wilson(k, n)
    assert got == pytest.approx((low, high), abs=2e-6)


def test_quick_mode_reports_300_pairs_per_rate_with_intervals_and_a_memory_scenario(
    tmp_path: Path,
) -> None:
    out = tmp_path / "rates.json"
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--quick", "--rounds", "4", "--max-rounds", "8",
         "--input-size", "8", "--resamples", "50", "--json", str(out)],
        capture_output=True, text=True, timeout=600, check=False,
    )
    assert done.returncode == 0, done.stderr
    results = json.loads(out.read_text())["results"]
    scenarios = [r["scenario"] for r in results]
    assert any("memory" in s and "vs" in s for s in scenarios), scenarios  # busy + bandwidth
    assert any("idle base" in s and "memory" in s for s in scenarios), scenarios
    for r in results:
        # At least 300 pairs for each rate, so one alarm reads 0.33 %, not 1.1 %.
        assert r["unchanged_pairs"] >= 300 and r["slowed_pairs"] >= 300, r
        for rate, (low, high) in ((r["false_alarm_rate"], r["false_alarm_ci"]),
                                  (r["detection_rate"], r["detection_ci"])):
            assert 0.0 <= low <= rate <= high <= 1.0 and high - low > 0, r
        shown = f"[{r['false_alarm_ci'][0] * 100:.2f}, {r['false_alarm_ci'][1] * 100:.2f}]"
        assert shown in done.stdout  # the interval is printed, not only stored
    assert re.search(r"targets: .*: met in \d+ of 6 scenarios", done.stdout)
    last = done.stdout.rstrip("\n").splitlines()[-1]
    match = LAST_LINE.match(last)
    assert match, last
    worst_fa = max(r["false_alarm_rate"] for r in results) * 100
    worst_det = min(r["detection_rate"] for r in results) * 100
    assert (float(match[1]), float(match[2])) == (round(worst_fa, 2), round(worst_det, 2))


def test_sessions_last_the_run_cap_and_baselines_are_their_first_rounds(tmp_path: Path) -> None:
    # The plugin: a baseline of 4 x timing_rounds, a run of up to 8 x. The
    # benchmark records sessions of the cap and replays baselines from their heads.
    out, saved = tmp_path / "rates.json", tmp_path / "sessions.json"
    base = [sys.executable, str(SCRIPT), "--sessions", "2", "--no-load", "--rounds", "4",
            "--input-size", "8", "--resamples", "50"]
    done = subprocess.run([*base, "--json", str(out), "--save", str(saved)],
                          capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stderr
    args = json.loads(out.read_text())["args"]
    assert (args["max_rounds"], args["baseline_rounds"]) == (32, 16)
    assert "4 rounds (up to 32), baselines of 16 rounds" in done.stdout
    sessions = json.loads(saved.read_text())["idle"]
    assert {s["rounds"] for ss in sessions.values() for s in ss} == {32}
    # Replaying with a cap longer than the recorded sessions is refused, naming both.
    again = subprocess.run([*base, "--load", str(saved), "--max-rounds", "64"],
                           capture_output=True, text=True, timeout=600, check=False)
    assert again.returncode == 2
    assert "holds sessions of 32 rounds, fewer than --max-rounds 64" in again.stderr
