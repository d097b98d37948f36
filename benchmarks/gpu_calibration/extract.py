"""Capture every model of timm's published throughput tables on meta and cache its ops.

Rerunnable and resumable: one gzip pickle per (model, image size, batch) under
``benchmarks/gpu_calibration/.cache/`` (not committed); models already cached are skipped.
Failures are recorded in ``failures.json`` beside them.

    nice -n 19 python benchmarks/gpu_calibration/extract.py [--limit N]
"""

from __future__ import annotations

import argparse
import csv
import gzip
import json
import linecache
import os
import pickle
import random
import signal
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
TABLES = Path(
    os.environ.get(
        "TIMM_TABLES", Path(__file__).resolve().parents[3] / "shared/data/timm-benchmarks"
    )
)
CACHE = HERE / ".cache"


def table_rows() -> list[tuple[str, int, int]]:
    """(model, image size, batch) of every row of both tables, each once."""
    keys: set[tuple[str, int, int]] = set()
    for path in sorted(TABLES.glob("benchmark-infer-*.csv")):
        with path.open() as f:
            for row in csv.DictReader(f):
                keys.add((row["model"], int(row["infer_img_size"]), int(row["infer_batch_size"])))
    rows = sorted(keys)
    random.Random(0).shuffle(rows)  # partial caches are a random sample of the zoo
    return rows


def cache_path(model: str, size: int, batch: int) -> Path:
    return CACHE / f"{model}@{size}x{batch}.pkl.gz"


class _Timeout(Exception):
    pass


def _alarm(signum: int, frame: Any) -> None:
    raise _Timeout


def site_lines(sites: list[str]) -> list[str]:
    """The source text of each ``file:line`` call site (attention is found by its line)."""
    out = []
    for site in sites:
        path, _, line = site.rpartition(":")
        text = linecache.getline(path, int(line)) if line.isdigit() else ""
        out.append(text.strip())
    return out


def extract(model: str, size: int, batch: int) -> dict[str, Any]:
    from pytest_modelprof import profile_model

    profile = profile_model(f"timm:{model}", input_shape=(batch, 3, size, size), mode="auto")
    capture = profile._capture
    return {
        "model": model,
        "size": size,
        "batch": batch,
        "mode": profile.capture.mode,
        "ops": capture.ops,
        "module_types": capture.module_types,
        "sites": capture.sites,
        "site_lines": site_lines(capture.sites),
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--limit", type=int, default=0)
    parser.add_argument("--timeout", type=int, default=300)
    parser.add_argument(
        "--start",
        type=float,
        default=0.0,
        help="begin at this fraction of the list (a second worker)",
    )
    parser.add_argument("--reverse", action="store_true", help="walk the list backwards")
    args = parser.parse_args()
    CACHE.mkdir(exist_ok=True)
    failures_path = CACHE / "failures.json"
    failures: dict[str, str] = (
        json.loads(failures_path.read_text()) if failures_path.exists() else {}
    )
    signal.signal(signal.SIGALRM, _alarm)
    rows = table_rows()
    cut = int(len(rows) * args.start)
    rows = rows[cut:] + rows[:cut]
    if args.reverse:
        rows.reverse()
    done = 0
    for model, size, batch in rows:
        key = f"{model}@{size}x{batch}"
        path = cache_path(model, size, batch)
        if path.exists() or key in failures or path.with_suffix(".tmp").exists():
            continue
        started = time.time()
        path.with_suffix(".tmp").touch()  # claimed: other workers skip it
        signal.alarm(args.timeout)
        try:
            data = extract(model, size, batch)
        except _Timeout:
            failures[key] = f"timeout after {args.timeout} s"
        except Exception as exc:  # a model that does not build here is recorded, not fatal
            failures[key] = f"{type(exc).__name__}: {str(exc)[:300]}"
        else:
            tmp = path.with_suffix(".part")
            tmp.write_bytes(gzip.compress(pickle.dumps(data, protocol=5), compresslevel=6))
            tmp.replace(path)
        finally:
            signal.alarm(0)
            path.with_suffix(".tmp").unlink(missing_ok=True)
        if key in failures:
            failures_path.write_text(json.dumps(failures, indent=1, sort_keys=True))
        done += 1
        failed = f"FAIL {failures[key][:80]}" if key in failures else ""
        print(f"{key} {time.time() - started:.1f}s {failed}", flush=True)
        import gc

        gc.collect()
        if args.limit and done >= args.limit:
            break


if __name__ == "__main__":
    sys.exit(main())
