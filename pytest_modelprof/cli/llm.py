"""``modelprof llm``: what a causal LM costs to serve (prefill, decode per token, KV cache)."""

from __future__ import annotations

import argparse
import re
from typing import Any

from pytest_modelprof.cli._common import EXIT_OK, Command, out, parse_arch, parse_dtype, show
from pytest_modelprof.cli.bench import parse_positive

__all__ = ["COMMAND", "parse_arch_list", "parse_memory"]

# A comma that starts another KEY=VALUE (a value may hold commas itself: a list, a dict).
_NEXT_PAIR = re.compile(r",(?=\s*[A-Za-z_]\w*\s*=)")


def parse_arch_list(text: str) -> list[tuple[str, Any]]:
    """``num_hidden_layers=2,hidden_size=64`` -> ``[("num_hidden_layers", 2), ...]``."""
    return [parse_arch(part) for part in _NEXT_PAIR.split(text)]


def parse_memory(text: str) -> float:
    """``80GB`` / ``141e9`` -> bytes."""
    from pytest_modelprof.units import parse_bytes

    try:
        value = parse_bytes(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"{exc}; write e.g. 80GB") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive size such as 80GB, got {text!r}")
    return value


def _parse_gpu(text: str) -> str:
    from pytest_modelprof.machines import MACHINES

    if text not in MACHINES:
        import difflib

        close = difflib.get_close_matches(text, list(MACHINES), n=3, cutoff=0.4)
        hint = f" Did you mean: {', '.join(close)}?" if close else ""
        raise argparse.ArgumentTypeError(
            f"unknown machine preset {text!r}.{hint} Presets: {', '.join(sorted(MACHINES))}"
        )
    return text


def _add_llm_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("model", help="a causal LM: hf:ARCH, hf:FOLDER (config.json), or "
                                 "pkg.module:factory returning a module that takes its cache")
    p.add_argument("--prompt", type=parse_positive, default=512, metavar="P",
                   help="prompt tokens per sequence counted in the prefill (default 512)")
    p.add_argument("--context", type=parse_positive, default=4096, metavar="L",
                   help="tokens in the cache after the decode step (default 4096)")
    p.add_argument("--batch", type=parse_positive, default=1, metavar="B",
                   help="sequences decoded together (default 1)")
    p.add_argument("--gpu", type=_parse_gpu, default=None, metavar="PRESET",
                   help="machine preset for the roofline and the fit (h100-bf16, a100-bf16, ...)")
    p.add_argument("--gpu-memory", type=parse_memory, default=None, metavar="BYTES",
                   help="memory to fit weights + KV cache into (default: the preset's)")
    p.add_argument("--dtype", type=parse_dtype, default=None, metavar="DTYPE",
                   help="weights and cache dtype (default: the model's, float32 for hf: "
                        "configs; serving usually runs bfloat16)")
    p.add_argument("--arch", type=parse_arch_list, action="append", default=[],
                   metavar="KEY=VALUE[,KEY=VALUE...]",
                   help="config fields / builder keywords, repeatable or comma-separated")
    p.add_argument("--allow-longer", action="store_true",
                   help="count a context beyond the config's max_position_embeddings")
    p.add_argument("--json", action="store_true",
                   help="print prefill, decode, kv_cache, weights (and roofline) as JSON")


def _run_llm(args: argparse.Namespace) -> int:
    import json

    from pytest_modelprof.llm import format_llm, profile_llm

    arch = {k: v for pairs in args.arch for k, v in pairs}
    costs = profile_llm(
        args.model,
        prompt=args.prompt,
        context=args.context,
        batch=args.batch,
        dtype=args.dtype,
        machine=args.gpu,
        memory_bytes=args.gpu_memory,
        allow_longer=bool(args.allow_longer),
        **arch,
    )
    if args.json:
        out(json.dumps(costs.model_dump(mode="json"), sort_keys=True, indent=2) + "\n")
    else:
        show(format_llm(costs) + "\n")
    return EXIT_OK


COMMAND = Command(
    name="llm",
    summary="serving costs of a causal LM: prefill, decode per token, KV cache, weights",
    description=(
        "Count a prefill of --prompt tokens and one decode step with --context tokens in the\n"
        "cache, at --batch sequences, on meta tensors (nothing allocated: a 70B decoder at 32k\n"
        "context takes seconds). The KV cache is measured from the tensors the model's own\n"
        "cache holds (sliding windows, grouped/multi-query heads, compressed latents as the\n"
        "model does them); weights count all experts, active weights the routed ones.\n"
        "With --gpu: decode tokens/s on the roofline (the step reads its weights and the\n"
        "cache once: max(bytes / bandwidth, FLOPs / peak)), memory- or compute-bound, and the\n"
        "largest batch and context whose weights + KV cache fit in the GPU's memory."
    ),
    examples="""\
  modelprof llm hf:llama --arch num_key_value_heads=8,max_position_embeddings=4096 \\
      --prompt 512 --context 4096 --gpu h100-bf16
  modelprof llm hf:mistral --context 32768 --dtype bfloat16 --json
  modelprof llm hf:llama --arch num_hidden_layers=80,hidden_size=8192,intermediate_size=28672,\\
      num_attention_heads=64,num_key_value_heads=8,max_position_embeddings=32768 \\
      --prompt 4096 --context 32768 --dtype bfloat16 --gpu h200-bf16
  modelprof llm hf:./my-model --context 8192 --batch 16 --gpu a100-bf16
  modelprof llm hf:gpt2 --context 2048 --allow-longer""",
    add_arguments=_add_llm_arguments,
    run=_run_llm,
)
