"""Time from ``modelprof profile resnt50`` (a misspelled name) to its error, quiet and busy.

Runs the command in fresh interpreters, rounds interleaved with the anchor, ``python -c "import
torch"`` (what a command that imports torch pays before it can say anything), once on a quiet
machine and once with ``python3 -c "while True: pass"`` running beside it. Prints the medians
and the ratio command / anchor. ``--tree`` runs another checkout's code (e.g. the commit before
the name lists were read without imports: ``git archive REV | tar -x -C /tmp/before``).

    python benchmarks/bench_typo_name.py [--repeat 5] [--tree PATH] [--name resnt50]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def _time(cmd: list[str], env: dict[str, str], expect_error: bool) -> float:
    start = time.perf_counter()
    # Run outside any checkout: ``python -m`` puts the working folder first on sys.path.
    done = subprocess.run(
        cmd, env=env, capture_output=True, text=True, check=False, cwd=tempfile.gettempdir()
    )
    elapsed = time.perf_counter() - start
    said = done.stderr.strip().splitlines()[-1] if done.stderr.strip() else ""
    if expect_error and not (done.returncode == 2 and "did you mean" in said.lower()):
        raise SystemExit(f"expected a 'did you mean' error, got {done.returncode}: {said}")
    return elapsed


def _measure(tree: Path, name: str, repeat: int) -> tuple[float, float]:
    env = dict(os.environ, PYTHONPATH=str(tree))
    command = [sys.executable, "-m", "pytest_modelprof.cli", "profile", name]
    anchor = [sys.executable, "-c", "import torch"]
    _time(command, env, True)  # warm the file-system cache and .pyc files
    _time(anchor, env, False)
    ours, theirs = [], []
    for _ in range(repeat):  # interleaved, so load changes hit both
        ours.append(_time(command, env, True))
        theirs.append(_time(anchor, env, False))
    return statistics.median(ours), statistics.median(theirs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--tree", type=Path, default=Path(__file__).resolve().parents[1])
    parser.add_argument("--name", default="resnt50")
    args = parser.parse_args()
    print(f"tree {args.tree}, modelprof profile {args.name}, median of {args.repeat}")
    for label in ("quiet", "busy"):
        busy = None
        if label == "busy":
            busy = subprocess.Popen([sys.executable, "-c", "while True: pass"])
            time.sleep(0.5)
        try:
            ours, anchor = _measure(args.tree, args.name, args.repeat)
        finally:
            if busy is not None:
                busy.kill()
                busy.wait()
        print(
            f"{label:5}  to the error {ours:7.2f} s   import torch {anchor:7.2f} s   "
            f"ratio {ours / anchor:5.2f}"
        )


if __name__ == "__main__":
    main()
