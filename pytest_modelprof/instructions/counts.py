"""The measured instruction counts, as profiles, baselines and ``modelprof bench`` keep them."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

__all__ = ["InstructionCounts", "keep_stored"]

#: How far two sessions' counts of an unchanged model may differ (relative), as a rewrite of
#: its baseline sees them: the interpreter and the allocator take slightly different paths in
#: another process (up to 0.4 % on a model of half a million instructions, less on larger
#: ones; benchmarks/bench_instructions.py). Half the default tolerance.
NOISE = 0.005


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


def keep_stored(stored: int, measured: int) -> int:
    """The count a rewritten baseline keeps: the stored one while the new measurement is
    within :data:`NOISE` of it (the file stays byte-identical), else the new one."""
    if stored > 0 and abs(measured - stored) <= NOISE * stored:
        return stored
    return measured
