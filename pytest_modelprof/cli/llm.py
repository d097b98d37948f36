"""``modelprof llm``: what a causal LM costs to serve (prefill, decode per token, KV cache)."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from pytest_modelprof.cli._common import (
    EXIT_OK,
    Command,
    add_option,
    machine_of,
    out,
    parse_positive,
    show,
)
from pytest_modelprof.cli.profile import PRECISION_CHOICES as PRECISIONS
from pytest_modelprof.errors import SettingsError

if TYPE_CHECKING:
    from pytest_modelprof.machines import Machine

__all__ = ["COMMAND"]

def _add_llm_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("model", help="a causal LM: hf:ARCH, hf:FOLDER (config.json), or "
                                 "pkg.module:factory returning a module that takes its cache")
    p.add_argument("--prompt", type=parse_positive, default=512, metavar="P",
                   help="prompt tokens per sequence counted in the prefill (default 512)")
    p.add_argument("--context", type=parse_positive, default=4096, metavar="L",
                   help="tokens in the cache after the decode step (default 4096)")
    p.add_argument("--batch", type=parse_positive, default=1, metavar="B",
                   help="sequences decoded together (default 1)")
    add_option(p, "--machine", help="hardware for the roofline and the fit: h100, h200, "
               "a100-80gb, rtx4090, l4, ... (a wrong name lists them all)")
    add_option(p, "--precision", choices=PRECISIONS,
               help=f"with --machine: the peak of {', '.join(PRECISIONS)} (default amp: the "
                    "fp16/bf16 tensor-core peak)")
    add_option(p, "--capacity", help="memory to fit weights + KV cache into, e.g. 80GB "
               "(default: the --machine's)")
    add_option(p, "--dtype", default=None, metavar="DTYPE",
               help="weights and cache dtype (default: the model's, float32 for hf: "
                    "configs; serving usually runs bfloat16)")
    add_option(p, "--arch", help="config fields / builder keywords, repeatable or "
               "comma-separated")
    p.add_argument("--allow-longer", action="store_true",
                   help="count a context beyond the config's max_position_embeddings")
    add_option(p, "--json", help="print prefill, decode, kv_cache, weights (and roofline) as JSON")


def _machine(args: argparse.Namespace) -> Machine | None:
    from pytest_modelprof.machines import MACHINES

    machine = machine_of(args)
    if machine is not None and machine.name not in MACHINES:
        raise SettingsError(f"--machine {args.machine}: a balance has no bandwidth or memory to "
                            "decode on; name the hardware (h100, a100-80gb, ...)")
    return machine


def _run_llm(args: argparse.Namespace) -> int:
    import json

    from pytest_modelprof.llm import format_llm, profile_llm  # profile_llm imports torch

    arch = dict(args.arch)
    costs = profile_llm(
        args.model,
        prompt=args.prompt,
        context=args.context,
        batch=args.batch,
        dtype=args.dtype,
        machine=_machine(args),
        memory_bytes=args.capacity,
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
        "With --machine: decode tokens/s on the roofline (the step reads its weights and the\n"
        "cache once: max(bytes / bandwidth, FLOPs / peak)), memory- or compute-bound, and the\n"
        "largest batch and context whose weights + KV cache fit in the GPU's memory."
    ),
    examples="""\
  modelprof llm hf:llama --arch num_key_value_heads=8,max_position_embeddings=4096 \\
      --prompt 512 --context 4096 --machine h100
  modelprof llm hf:mistral --context 32768 --dtype bfloat16 --json
  modelprof llm hf:llama --arch num_hidden_layers=80,hidden_size=8192,intermediate_size=28672,\\
      num_attention_heads=64,num_key_value_heads=8,max_position_embeddings=32768 \\
      --prompt 4096 --context 32768 --dtype bfloat16 --machine h200 --precision bf16
  modelprof llm hf:./my-model --context 8192 --batch 16 --machine a100-80gb
  modelprof llm hf:gpt2 --context 2048 --allow-longer""",
    add_arguments=_add_llm_arguments,
    run=_run_llm,
)
