"""pytest start-up overhead of the modelprof plugin in a project that uses none of its markers.

Runs ``pytest -q`` on a throwaway project of plain tests, with the plugin and with
``-p no:modelprof``, and prints the median wall times and their ratio. The plugin must not
import torch (or pydantic) there, so the ratio should stay close to 1.

    python benchmarks/bench_startup.py [--repeat 7] [--tests 50]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def _time(cmd: list[str], cwd: Path) -> float:
    start = time.perf_counter()
    subprocess.run(cmd, cwd=cwd, check=True, capture_output=True)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--tests", type=int, default=50)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "pytest.ini").write_text("[pytest]\n")
        body = "".join(f"def test_{i}():\n    assert {i} == {i}\n\n" for i in range(args.tests))
        (root / "test_plain.py").write_text(body)
        base = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"]
        with_plugin = base
        without = [*base, "-p", "no:modelprof"]
        _time(with_plugin, root)  # warm the file-system cache and .pyc files
        _time(without, root)
        on, off = [], []
        for _ in range(args.repeat):  # interleave so that load changes hit both sides
            on.append(_time(with_plugin, root))
            off.append(_time(without, root))
    t_on, t_off = statistics.median(on), statistics.median(off)
    print(f"pytest with modelprof:        {t_on * 1000:8.1f} ms (median of {args.repeat})")
    print(f"pytest with -p no:modelprof:  {t_off * 1000:8.1f} ms (median of {args.repeat})")
    print(f"ratio:                        {t_on / t_off:8.3f}")


if __name__ == "__main__":
    main()
