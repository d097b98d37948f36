"""Decode on a machine preset: roofline tokens/s, the bound, and what fits in its memory."""

from __future__ import annotations

from pytest_modelprof.llm.costs import LLMCosts, Roofline
from pytest_modelprof.machines import MACHINES, Machine

__all__ = ["roofline"]


def machine_memory(machine: Machine) -> int | None:
    """The memory in bytes of the :data:`~pytest_modelprof.machines.MACHINES` entry the machine
    is the roofline of (``None`` for a bare balance)."""
    spec = MACHINES.get(machine.name)
    return spec.memory_bytes if spec is not None else None


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
