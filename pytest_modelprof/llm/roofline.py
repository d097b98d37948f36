"""Decode on a machine preset: roofline tokens/s, the bound, and what fits in its memory."""

from __future__ import annotations

from pytest_modelprof.llm.costs import LLMCosts, Roofline
from pytest_modelprof.machines import Machine

__all__ = ["MEMORY_BYTES", "machine_memory", "roofline"]

_GIB = 2**30

#: Datasheet memory of the GPU presets (the variant whose bandwidth the preset uses). A machine
#: that declares its own capacity (``memory_bytes``) wins over this table.
MEMORY_BYTES: dict[str, int] = {
    "t4-fp16": 16 * _GIB,
    "a100-fp32": 80 * _GIB,  # A100 80 GB: the 2.039 TB/s of the preset
    "a100-bf16": 80 * _GIB,
    "h100-bf16": 80 * _GIB,  # H100 SXM 80 GB, 3.35 TB/s
    "h200-bf16": 141 * 10**9,  # NVIDIA gives 141 GB
    "rtx4090-fp16": 24 * _GIB,
}


def machine_memory(machine: Machine) -> int | None:
    """The machine's memory in bytes, where known."""
    own = getattr(machine, "memory_bytes", None)
    if isinstance(own, (int, float)) and own > 0:
        return int(own)
    return MEMORY_BYTES.get(machine.name)


def roofline(
    costs: LLMCosts,
    machine: Machine,
    step_flops: int,
    memory_bytes: float | None,
    max_context: int | None,
) -> Roofline:
    """Decode time per step, tokens/s and the fit of weights + KV cache on ``machine``.

    The step reads at least the weights it uses and the whole KV cache once; it takes
    ``max(bytes / bandwidth, FLOPs / peak)``. The largest batch at the context is exact (each
    sequence has its own cache); the largest context at the batch extends the cache by its
    measured growth per token (``max_context`` caps it at the model's positions).
    """
    step_bytes = costs.weights.active_bytes + costs.kv_cache.bytes
    memory_time = step_bytes / machine.bandwidth
    compute_time = step_flops / machine.peak_flops
    seconds = max(memory_time, compute_time)
    capacity = int(memory_bytes) if memory_bytes is not None else machine_memory(machine)
    fits = max_batch = longest = None
    if capacity is not None:
        free = capacity - costs.weights.bytes
        kv, batch = costs.kv_cache.bytes, costs.batch
        fits = kv <= free
        per_sequence = kv / batch
        max_batch = max(0, int(free // per_sequence)) if per_sequence > 0 else None
        growth = costs.kv_cache.growth_per_token * batch
        if growth > 0:
            longest = max(0, costs.context + int((free - kv) // growth))
            if max_context is not None:
                longest = min(longest, max_context)
        elif free >= kv:
            longest = max_context  # the cache stops growing (every window full)
        else:
            longest = 0
    return Roofline(
        machine=machine.name,
        step_bytes=step_bytes,
        seconds_per_step=seconds,
        tokens_per_s=costs.batch / seconds if seconds > 0 else float("inf"),
        bound="memory-bound" if memory_time >= compute_time else "compute-bound",
        memory_bytes=capacity,
        fits=fits,
        max_batch=max_batch,
        max_context=longest,
    )
