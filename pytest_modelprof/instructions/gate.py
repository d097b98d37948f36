"""The instructions collector the gate runs (``baseline.metrics``: ``INSTRUCTIONS``).

Its evidence is the :class:`~pytest_modelprof.instructions.counts.InstructionCounts` as JSON
plus ``instructions``: the gated figure (the forward, or the training step of a training-graph
profile). One callgrind server per process measures every test (:func:`shared_server`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pytest_modelprof.errors import ModelprofError
from pytest_modelprof.instructions.client import shared_server

if TYPE_CHECKING:
    from pytest_modelprof.baseline.collector import Measure

__all__ = ["measure"]


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
