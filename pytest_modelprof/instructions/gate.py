"""The instructions collector the gate runs (:data:`INSTRUCTIONS_COLLECTOR`).

Its evidence is the :class:`~pytest_modelprof.instructions.counts.InstructionCounts` as JSON
plus ``instructions``: the gated figure (the forward, or the training step of a training-graph
profile). One callgrind server per process measures every test (:func:`shared_server`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pytest_modelprof.baseline.collector import (
    CollectorLimits,
    EvidenceData,
    JsonCollector,
    Measure,
)
from pytest_modelprof.baseline.metrics import INSTRUCTIONS
from pytest_modelprof.errors import ModelprofError
from pytest_modelprof.instructions.client import shared_server
from pytest_modelprof.instructions.counts import keep_stored

__all__ = ["INSTRUCTIONS_COLLECTOR"]


def measure(call: Measure) -> dict[str, Any] | None:
    """CPU instructions per call of the test's model under callgrind."""
    request = call.request
    if request.device not in (None, "cpu"):
        raise ModelprofError(
            f"instructions count what the CPU executes, and this profile runs on "
            f"device={request.device!r}; measure them on the CPU (leave device= out)"
        )
    training = bool(request.include_backward)
    phases: tuple[Any, ...] = ("forward", "backward", "training_step") if training else ("forward",)
    counts = shared_server().measure(
        request.model,
        input_shape=request.input_shape,
        inputs=request.inputs,
        phases=phases,
        dtype=request.dtype,
    )
    data: dict[str, Any] = counts.model_dump(mode="json")
    data["instructions"] = counts.training_step if training else counts.forward
    return data


def keep(stored: EvidenceData | None, new: EvidenceData, limits: CollectorLimits) -> EvidenceData:
    """Rewriting a baseline: the stored counts while the new one is within the measurement's
    noise on the same CPU, so a rewrite of an unchanged model leaves the file byte-identical."""
    if stored is None or stored.get("cpu") != new.get("cpu"):
        return new
    old, now = stored.get("instructions"), new.get("instructions")
    if not isinstance(old, int) or not isinstance(now, int) or keep_stored(old, now) == now:
        return new
    return stored


@dataclass(frozen=True)
class InstructionsCollector(JsonCollector):
    """Counts depend on the CPU: the baseline's environment records the one that counted."""

    def facts(self, evidence: EvidenceData) -> Mapping[str, str]:
        return {
            "cpu": str(evidence.get("cpu", "unknown")),
            "cpu_flags": str(evidence.get("cpu_flags", "")),
        }


#: CPU instructions per call under callgrind: one valgrind process per session or xdist worker;
#: the evidence keeps the counts and the CPU.
INSTRUCTIONS_COLLECTOR = InstructionsCollector(
    INSTRUCTIONS,
    measure_with=measure,
    keep=keep,
    needs="valgrind (apt-get install valgrind); the model run under callgrind",
)
