"""``modelprof memory``: the 70B example's time and memory, and the peers side by side.

    python benchmarks/bench_memory_fit.py                # both parts
    python benchmarks/bench_memory_fit.py --only speed   # the 70B example only
    PYTHONPATH=/path/to/peers python benchmarks/bench_memory_fit.py --only peers
    PYTHONPATH=/path/to/deepspeed python benchmarks/bench_memory_fit.py --only zero

Speed: the issue's example (a LLaMA-70B-shaped decoder, training step, bf16-mixed, AdamW,
4,096 tokens, 8 devices ZeRO-3) run as the command a user types, in ``--runs`` fresh child
processes one after the other (default 3): each one's CPU time (user + system), wall time and
peak RSS (``getrusage(RUSAGE_CHILDREN)``), imports included, the best of each, and the load
average before and after (other processes on the machine stretch the wall time, less the CPU).
Targets: <= 10 s and <= 2 GB.

Peers, on five models built on meta (nothing allocated), one sample at the model's default
input: our inference and training (fp32, AdamW) peaks and model states, against DeepSpeed's
``estimate_zero2_model_states_mem_needs`` (one GPU, no offload; model states only, fp16
weights with fp32 master: 4 + 16 bytes per parameter, times its 1.5 buffer factor) and
accelerate's ``calculate_maximum_sizes`` (what ``accelerate estimate-memory`` prints: the
weights for inference, 4x the weights "for training with Adam"). Peers that are not installed
are left out and said so.

ZeRO: model states per device of five large configs (GPT-2 XL, LLaMA-2 7B/13B/70B, Mixtral
8x7B) at 8 and 64 devices, ZeRO-2 and ZeRO-3: ours in the master-weights recipe
(``bf16-master``), DeepSpeed's recipe by hand, and DeepSpeed's estimators (their published
formulas when DeepSpeed is not installed, said in ``deepspeed_source``).
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
    "--device-count", "8", "--shard", "zero3",
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


ZERO_MODELS: dict[str, tuple[str, dict[str, Any]]] = {
    "GPT-2 XL": ("hf:gpt2", {"n_layer": 48, "n_embd": 1600, "n_head": 25}),
    "LLaMA-2 7B": ("hf:llama", {"num_hidden_layers": 32, "hidden_size": 4096,
                                "intermediate_size": 11008, "num_attention_heads": 32,
                                "num_key_value_heads": 32, "vocab_size": 32000}),
    "LLaMA-2 13B": ("hf:llama", {"num_hidden_layers": 40, "hidden_size": 5120,
                                 "intermediate_size": 13824, "num_attention_heads": 40,
                                 "num_key_value_heads": 40, "vocab_size": 32000}),
    "Mixtral 8x7B": ("hf:mixtral", {"num_hidden_layers": 32, "hidden_size": 4096,
                                    "intermediate_size": 14336, "num_attention_heads": 32,
                                    "num_key_value_heads": 8, "num_local_experts": 8,
                                    "num_experts_per_tok": 2, "vocab_size": 32000}),
    "LLaMA-2 70B": ("hf:llama", {"num_hidden_layers": 80, "hidden_size": 8192,
                                 "intermediate_size": 28672, "num_attention_heads": 64,
                                 "num_key_value_heads": 8, "vocab_size": 32000}),
}


def _deepspeed_params(model: Any) -> tuple[int, int]:
    """DeepSpeed's ``model_to_params``: all parameters, and the largest count held directly
    by one module (it dedups by ``data_ptr()``, which is 0 for every meta tensor: by object)."""
    total = sum(p.numel() for p in model.parameters())
    largest = max(sum(p.numel() for p in m.parameters(recurse=False)) for m in model.modules())
    return total, largest


def zero(devices: tuple[int, ...] = (8, 64)) -> list[dict[str, Any]]:
    """Model states per device under ZeRO-2 and ZeRO-3: ours (bf16-master, AdamW, the step
    run on fake tensors), DeepSpeed's recipe by hand, DeepSpeed's own estimators (GPU, no
    offload; imported when installed, else its published formulas)."""
    import torch

    from pytest_modelprof.fit import StepOptions, estimate_memory
    from pytest_modelprof.models import resolve

    try:
        from deepspeed.runtime.zero.stage3 import estimate_zero3_model_states_mem_needs
        from deepspeed.runtime.zero.stage_1_and_2 import estimate_zero2_model_states_mem_needs

        source = "deepspeed"
    except ImportError:
        source = "formula"

        def estimate_zero2_model_states_mem_needs(  # type: ignore[misc]
            total: int, gpus: int, nodes: int, offload: bool, factor: float
        ) -> tuple[int, int]:
            return int(total * 4 * gpus * factor), 2 * total + int(18 * total / gpus)

        def estimate_zero3_model_states_mem_needs(  # type: ignore[misc]
            total: int, largest: int, gpus: int, nodes: int, offload: bool, offload_params: bool,
            zero_init: bool, factor: float,
        ) -> tuple[int, int, int]:
            gpu = 4 * largest + int(18 * total / gpus)
            return int(largest * 4 * gpus * factor), gpu, 4 * largest

    rows = []
    for label, (name, arch) in ZERO_MODELS.items():
        with torch.device("meta"):
            model = resolve(name).build(**arch)
        total, largest = _deepspeed_params(model)
        tensors = len(list(model.parameters()))
        for n in devices:
            row: dict[str, Any] = {"model": label, "params": total, "tensors": tensors,
                                   "largest_layer_params": largest, "devices": n,
                                   "deepspeed_source": source}
            for stage in ("zero2", "zero3"):
                options = StepOptions(precision="bf16-master", device_count=n, shard=stage)
                est = estimate_memory(name, batch=1, seq_len=8, options=options, **arch)
                row[f"ours_{stage}"] = sum(est.model_states.values())
                row[f"ours_{stage}_parts"] = est.model_states
            row["recipe_zero2"] = 2 * total + -(-14 * total // n)  # 2 + (2 + 12)/N
            row["recipe_zero3"] = -(-16 * total // n)
            row["deepspeed_zero2"] = int(
                estimate_zero2_model_states_mem_needs(total, n, 1, False, 1.5)[1]
            )
            zero3 = estimate_zero3_model_states_mem_needs(
                total, largest, n, 1, False, False, True, 1.5
            )
            row["deepspeed_zero3"] = int(zero3[1])
            rows.append(row)
            print(json.dumps(row), file=sys.stderr, flush=True)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", choices=("speed", "peers", "zero"))
    parser.add_argument("--runs", type=int, default=3, help="fresh processes for speed")
    args = parser.parse_args()
    out: dict[str, Any] = {}
    if args.only in (None, "speed"):
        out["speed"] = speed(args.runs)
    if args.only in (None, "peers"):
        out["peers"] = peers()
    if args.only in (None, "zero"):
        out["zero"] = zero()
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
