"""``modelprof memory``: the 70B example's time and memory, and the peers side by side.

    python benchmarks/bench_memory_fit.py                # both parts
    python benchmarks/bench_memory_fit.py --only speed   # the 70B example only
    PYTHONPATH=/path/to/peers python benchmarks/bench_memory_fit.py --only peers

Speed: the issue's example (a LLaMA-70B-shaped decoder, training step, bf16-mixed, AdamW,
4,096 tokens, 8 devices ZeRO-3) run as the command a user types, in ``--runs`` fresh child
processes one after the other (default 3): each one's CPU time (user + system), wall time and
peak RSS (``getrusage(RUSAGE_CHILDREN)``), imports included, the best of each, and the load
average before and after (other processes on the machine stretch the wall time, less the CPU).
Targets (issue 22): <= 10 s and <= 2 GB.

Peers, on five models built on meta (nothing allocated), one sample at the model's default
input: our inference and training (fp32, AdamW) peaks and model states, against DeepSpeed's
``estimate_zero2_model_states_mem_needs`` (one GPU, no offload; model states only, fp16
weights with fp32 master: 4 + 16 bytes per parameter, times its 1.5 buffer factor) and
accelerate's ``calculate_maximum_sizes`` (what ``accelerate estimate-memory`` prints: the
weights for inference, 4x the weights "for training with Adam"). Peers that are not installed
are left out and said so.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from typing import Any

SEVENTY_B = [
    "hf:llama",
    "--arch",
    "num_hidden_layers=80,hidden_size=8192,intermediate_size=28672,num_attention_heads=64,"
    "num_key_value_heads=8",
    "--train", "--precision", "bf16-mixed", "--optimizer", "adamw", "--seq-len", "4096",
    "--devices", "8", "--shard", "zero3",
]
PEER_MODELS = {
    "resnet50": {},
    "vit_b_16": {},
    "hf:gpt2": {},
    "hf:bert": {},
    "hf:llama (1.1B)": {
        "name": "hf:llama",
        "arch": {"num_hidden_layers": 22, "hidden_size": 2048, "intermediate_size": 5632,
                 "num_attention_heads": 32, "num_key_value_heads": 4},
    },
}


def speed(runs: int = 3) -> dict[str, Any]:
    load_before = os.getloadavg()
    samples: list[dict[str, Any]] = []
    doc: dict[str, Any] = {}
    for _ in range(runs):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        done = subprocess.run(
            [sys.executable, "-m", "pytest_modelprof.cli", "memory", *SEVENTY_B, "--json"],
            capture_output=True,
            text=True,
            check=True,
        )
        wall = time.perf_counter() - start
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        # ru_maxrss of the children is the largest so far, and each run is alike: a run's own
        # peak is not smaller than what this reports for it.
        samples.append(
            {
                "cpu_s": round(cpu, 2),
                "wall_s": round(wall, 2),
                "max_rss_gb": round(after.ru_maxrss * 1024 / 1e9, 3),
            }
        )
        print(json.dumps(samples[-1]), file=sys.stderr, flush=True)
        doc = json.loads(done.stdout)
    return {
        "command": "modelprof memory " + " ".join(SEVENTY_B),
        "runs": samples,
        "best_cpu_s": min(s["cpu_s"] for s in samples),
        "best_wall_s": min(s["wall_s"] for s in samples),
        "max_rss_gb": max(s["max_rss_gb"] for s in samples),
        "load_average_before": [round(x, 2) for x in load_before],
        "load_average_after": [round(x, 2) for x in os.getloadavg()],
        "peak_bytes_per_device": doc["memory"]["peak_bytes"],
        "breakdown": doc["memory"]["breakdown"],
        "parameters": doc["parameter_count"],
    }


def peers() -> list[dict[str, Any]]:
    import torch

    from pytest_modelprof.fit import StepOptions, estimate_memory
    from pytest_modelprof.models import resolve

    rows = []
    for label, spec in PEER_MODELS.items():
        name = spec.get("name", label)
        arch = spec.get("arch", {})
        with torch.device("meta"):
            model = resolve(name).build(**arch)
        n = sum(p.numel() for p in model.parameters())
        inference = estimate_memory(name, options=StepOptions(train=False), **arch)
        train = estimate_memory(name, options=StepOptions(), **arch)
        row: dict[str, Any] = {
            "model": label,
            "params": n,
            "ours_inference_peak": inference.peak_bytes,
            "ours_train_peak": train.peak_bytes,
            "ours_train_model_states": sum(train.model_states.values()),
            "ours_train_activations_at_peak": train.breakdown["activations"],
            "input": train.input_shapes,
        }
        try:
            from deepspeed.runtime.zero.stage_1_and_2 import (
                estimate_zero2_model_states_mem_needs,
            )

            _, gpu = estimate_zero2_model_states_mem_needs(n, 1, 1, False, 1.5)
            row["deepspeed_zero2_1gpu"] = int(gpu)
        except ImportError:
            row["deepspeed_zero2_1gpu"] = None
        try:
            from accelerate.utils import calculate_maximum_sizes

            total, _largest = calculate_maximum_sizes(model)
            row["accelerate_inference"] = int(total)
            row["accelerate_train_adam"] = int(4 * total)
        except ImportError:
            row["accelerate_inference"] = row["accelerate_train_adam"] = None
        rows.append(row)
        print(json.dumps(row), file=sys.stderr, flush=True)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", choices=("speed", "peers"))
    parser.add_argument("--runs", type=int, default=3, help="fresh processes for speed")
    args = parser.parse_args()
    out: dict[str, Any] = {}
    if args.only in (None, "speed"):
        out["speed"] = speed(args.runs)
    if args.only in (None, "peers"):
        out["peers"] = peers()
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
