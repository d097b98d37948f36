"""The measured instruction counts, as profiles, baselines and ``modelprof bench`` keep them."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

__all__ = ["InstructionCounts"]


class InstructionCounts(BaseModel):
    """CPU instructions per call under callgrind (``None``: the phase was not measured).

    ``capability`` is torch's kernel path inside valgrind (``AVX2``: valgrind reports no
    AVX-512); ``cpu`` and ``cpu_flags`` are the host's, from ``/proc/cpuinfo``.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    forward: int | None = None
    backward: int | None = None
    training_step: int | None = None
    calls: int
    warmup: int = 0
    cpu: str = "unknown"
    cpu_flags: str = ""
    capability: str = ""
