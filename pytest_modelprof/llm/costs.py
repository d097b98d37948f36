"""The serving-cost document of a causal LM: :class:`LLMCosts` (pydantic, torch-free).

Profiles and baselines carry it (the gate's ``kv_cache``, ``decode_flops`` and
``prefill_flops`` read it), so reading one never needs torch; it is measured by
:func:`pytest_modelprof.llm.profile_llm`.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

from pytest_modelprof.units import format_bytes, format_count

__all__ = ["Prefill", "Decode", "KVCache", "Weights", "Roofline", "LLMCosts", "format_llm"]


class _Doc(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Prefill(_Doc):
    """One prefill of ``tokens`` prompt tokens per sequence into an empty cache."""

    tokens: int
    flops: int
    macs: int
    bytes: int  # unfused traffic, as every ``bytes`` of a profile


class Decode(_Doc):
    """One decode step (one new token per sequence) with ``context`` tokens in the cache after it.

    Per token = the step's count divided by the batch (each sequence decodes one token).
    """

    context: int
    flops_per_token: int
    macs_per_token: int
    bytes_per_token: int
    arithmetic_intensity: float  # FLOPs / bytes of the step


class KVCache(_Doc):
    """The cache tensors the model allocated, measured after the decode step (context × batch)."""

    bytes: int
    bytes_per_token: float  # bytes / (context × batch)
    # What one more token per sequence adds at this context (0 for a layer whose sliding window
    # is full): the step's own growth, measured, used to extrapolate the largest context.
    growth_per_token: float


class Weights(_Doc):
    """Parameter bytes: all of them, and those the decode step reads (MoE: routed experts)."""

    bytes: int
    active_bytes: int


class Roofline(_Doc):
    """Decode on one machine preset: the step's time is max(bytes / bandwidth, FLOPs / peak).

    ``step_bytes`` is what the step must read at least once: the weights it uses and the KV
    cache (the unfused traffic of ``Decode.bytes_per_token`` counts every intermediate too).
    """

    machine: str
    step_bytes: int
    seconds_per_step: float
    tokens_per_s: float
    bound: Literal["memory-bound", "compute-bound"]
    memory_bytes: int | None = None  # the machine's memory, when known
    fits: bool | None = None  # weights + KV cache at context × batch within memory_bytes
    max_batch: int | None = None  # at this context
    max_context: int | None = None  # at this batch (linear in growth_per_token beyond it)


class LLMCosts(_Doc):
    """What serving a causal LM costs: prefill, decode per token, KV cache, weights."""

    model: str
    prompt: int
    context: int
    batch: int
    dtype: str
    prefill: Prefill
    decode: Decode
    kv_cache: KVCache
    weights: Weights
    roofline: Roofline | None = None
    notes: list[str] = []


def format_llm(costs: LLMCosts) -> str:
    """A short human summary, one figure a line."""
    p, d, kv, w = costs.prefill, costs.decode, costs.kv_cache, costs.weights
    lines = [
        f"{costs.model}: prompt {costs.prompt}, context {costs.context}, batch {costs.batch}, "
        f"{costs.dtype}",
        f"  prefill         {format_count(p.flops, 'FLOPs')}, {format_count(p.macs, 'MACs')}, "
        f"{format_bytes(p.bytes)} moved",
        f"  decode / token  {format_count(d.flops_per_token, 'FLOPs')}, "
        f"{format_count(d.macs_per_token, 'MACs')}, {format_bytes(d.bytes_per_token)} moved, "
        f"intensity {d.arithmetic_intensity:.3g} FLOP/B",
        f"  KV cache        {format_bytes(kv.bytes)} at {costs.context} x {costs.batch} "
        f"({format_bytes(kv.bytes_per_token)} per token, +{format_bytes(kv.growth_per_token)} "
        "per extra token)",
        f"  weights         {format_bytes(w.bytes)} ({format_bytes(w.active_bytes)} read per "
        "decode step)",
    ]
    r = costs.roofline
    if r is not None:
        lines.append(
            f"  {r.machine:<15} {r.tokens_per_s:.4g} tokens/s decode ({r.bound}; "
            f"{format_bytes(r.step_bytes)} and {r.seconds_per_step * 1e3:.3g} ms a step)"
        )
        if r.memory_bytes is not None:
            verdict = "fits" if r.fits else "does NOT fit"
            longest = "not bounded by the cache" if r.max_context is None else r.max_context
            lines.append(
                f"  {'':<15} weights + KV cache {verdict} in {format_bytes(r.memory_bytes)}; "
                f"largest batch at {costs.context}: {r.max_batch}, largest context at batch "
                f"{costs.batch}: {longest}"
            )
    lines.extend(f"  note: {n}" for n in costs.notes)
    return "\n".join(lines)
