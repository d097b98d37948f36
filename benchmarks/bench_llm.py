"""``modelprof llm`` on a 70B LLaMA config (prompt 4096, context 32768), and llm-analysis beside it.

    python benchmarks/bench_llm.py                    # ours, 3 fresh processes
    PYTHONPATH=PEERS python benchmarks/bench_llm.py   # with llm-analysis installed in PEERS

The 70B shape: 80 layers, hidden 8192, intermediate 28672, 64 heads, 8 KV heads, vocabulary
32000, bfloat16, on an H200 preset (141 GB: the weights alone do not fit an 80 GB H100). Ours
is the whole command in a fresh process (Python start-up, imports, the meta build, a counted
prefill of 4096 tokens, the cache filled to 32767 and a counted decode step), wall-clock and
CPU time, best of ``--repeat``. llm-analysis (0.2.2, closed forms of a few known shapes) gets
the same shape as a ModelConfig and the same GPU figures; it needs ``expansion_ratio`` given,
since 28672 is not a multiple of 8192. calflops counts one forward of real (or empty)
weights: no decode step, no cache, so it has no column here.

llm-analysis installs without its pins (it asks transformers < 5):
``pip install --target PEERS --no-deps llm-analysis==0.2.2 fire==0.5.0 six termcolor``.
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

ARCH = (
    "num_hidden_layers=80,hidden_size=8192,intermediate_size=28672,num_attention_heads=64,"
    "num_key_value_heads=8,vocab_size=32000,max_position_embeddings=32768"
)
COMMAND = [
    "modelprof", "llm", "hf:llama", "--arch", ARCH, "--prompt", "4096", "--context", "32768",
    "--dtype", "bfloat16", "--machine", "h200", "--precision", "bf16", "--json",
]

PEER = """
import json, logging
from llm_analysis import config as c
from llm_analysis.analysis import infer
c.gpu_configs["h200"] = c.GPUConfig(
    name="h200", mem_per_GPU_in_GB=141, hbm_bandwidth_in_GB_per_sec=4800,
    intra_node_bandwidth_in_GB_per_sec=450, intra_node_min_message_latency=8e-06,
    peak_fp16_TFLOPS=989, peak_i8_TFLOPS=1979, peak_i4_TFLOPS=3958,
    inter_node_bandwidth_in_GB_per_sec=400,
)
c.model_configs["llama-70b-shape"] = c.ModelConfig(
    name="llama-70b-shape", num_layers=80, n_head=64, hidden_dim=8192, vocab_size=32000,
    max_seq_len=32768, num_key_value_heads=8, ffn_embed_dim=28672, expansion_ratio=3.5,
    model_type="llama",
)
r = infer(model_name="llama-70b-shape", gpu_name="h200", dtype_name="w16a16e16",
          seq_len=4096, num_tokens_to_generate=32768 - 4096, log_level="ERROR")
print(json.dumps({k: v for k, v in r.items() if isinstance(v, (int, float, str))}))
"""


def _timed(cmd: list[str], env: dict[str, str] | None = None) -> tuple[float, float, str]:
    """Wall and CPU seconds of one fresh process, and its stdout."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(cmd[:3])} failed:\n{done.stderr[-2000:]}")
    return wall, cpu, done.stdout


def _ours(repeat: int) -> dict[str, Any]:
    runs = [_timed(COMMAND) for _ in range(repeat)]
    costs = json.loads(runs[-1][2])
    return {
        "wall_s": min(r[0] for r in runs),
        "cpu_s": min(r[1] for r in runs),
        "walls": [round(r[0], 2) for r in runs],
        "costs": costs,
    }


def _peer() -> dict[str, Any] | str:
    try:
        wall, cpu, out = _timed([sys.executable, "-c", PEER], env=dict(os.environ))
    except SystemExit as exc:
        return f"not run: {str(exc).splitlines()[-1]}"
    result: dict[str, Any] = json.loads(out.strip().splitlines()[-1])
    result["wall_s"], result["cpu_s"] = wall, cpu
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--json", metavar="FILE")
    args = parser.parse_args()
    ours = _ours(args.repeat)
    peer = _peer()
    c = ours["costs"]
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    print(f"modelprof llm: best {ours['wall_s']:.2f} s wall, {ours['cpu_s']:.2f} s CPU "
          f"(walls {ours['walls']})")
    p, d, kv, w, r = (c[k] for k in ("prefill", "decode", "kv_cache", "weights", "roofline"))
    print(f"  prefill {p['flops']:.4e} FLOPs ({p['macs']:,} MACs), decode "
          f"{d['flops_per_token']:.4e} FLOPs/token ({d['macs_per_token']:,} MACs), KV cache "
          f"{kv['bytes']:,} B, weights {w['bytes']:,} B, {r['tokens_per_s']:.2f} tokens/s on "
          f"{r['machine']}")
    if isinstance(peer, str):
        print(f"llm-analysis: {peer}")
    else:
        print(f"llm-analysis: {peer['wall_s']:.2f} s wall, {peer['cpu_s']:.2f} s CPU")
        for key in sorted(peer):
            if any(s in key for s in ("flops", "kv_cache", "weight", "latency", "tokens")):
                print(f"  {key} = {peer[key]}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"ours": ours, "llm_analysis": peer}, f, indent=2, sort_keys=True)


if __name__ == "__main__":
    main()
