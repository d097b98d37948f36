"""The memory metrics' collector: the step of a gated test, estimated (nothing allocated).

``baseline/memory_metrics.py`` declares the metrics; :data:`MEMORY_COLLECTOR` measures them
when a limit on one of them is set. The marker's ``optimizer``, ``precision``,
``devices``, ``shard`` and ``checkpointing`` (``ProfileRequest.step``) say which step.
:func:`sweep_memory` estimates the same steps at each point of a scaling sweep (growth limits).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from pytest_modelprof.baseline.collector import (
    CollectorRequest,
    EvidenceData,
    JsonCollector,
    Measure,
)
from pytest_modelprof.baseline.memory_metrics import MEMORY, STEP_COMPONENTS
from pytest_modelprof.fit.options import StepOptions, step_options

__all__ = ["MEMORY_COLLECTOR", "sweep_memory"]


def memory_evidence(call: Measure) -> EvidenceData | None:
    """Peak bytes of the limited steps (train, inference) and their components."""
    from pytest_modelprof.fit.estimate import estimate_memory

    request = call.request
    steps = [s for s in STEP_COMPONENTS if any(m.startswith(f"{s}_") for m in call.limited)]
    out: dict[str, Any] = {}
    for step in steps:
        options = request_options(request, step)
        kwargs: dict[str, Any] = {}
        if request.inputs is not None:
            kwargs["inputs"] = request.inputs
        elif request.input_shape is not None:
            kwargs["input_shape"] = _one_shape(request.input_shape)
        est = estimate_memory(request.model, options=options, **kwargs)
        out[f"{step}_memory"] = est.peak_bytes
        for part in STEP_COMPONENTS[step]:
            out[f"{step}_memory_{part}"] = est.breakdown[part]
        out[f"{step}_settings"] = {
            "optimizer": f"{est.optimizer}:{est.optimizer_impl}",
            "precision": est.precision,
            "devices": est.devices,
            "shard": est.shard,
            "checkpointing": options.checkpointing,
            "mode": est.mode,
            "peak_at": est.peak_at.model_dump(),
        }
    return out or None


def request_options(request: CollectorRequest, step: str) -> StepOptions:
    """The step the marker names (``ProfileRequest.step``) for ``"train"`` or ``"inference"``;
    the marker's ``dtype=`` casts weights and inputs, as a pure low precision does."""
    import torch

    given = dict(request.step)
    options = step_options(given, train=step == "train")
    if request.dtype is not None and options.precision == "fp32":
        low = {torch.bfloat16: "bf16", torch.float16: "fp16"}.get(
            getattr(torch, str(request.dtype))
        )
        if low is not None:
            options = step_options({**given, "precision": low}, train=step == "train")
    return options


def sweep_memory(
    request: CollectorRequest, fields: Sequence[str]
) -> Callable[[Any, Any], dict[str, float]]:
    """A sweep's ``measure_more``: the peak of each step in ``fields`` (``"train_memory"``,
    ``"inference_memory"``) at one point, estimated on that point's module and inputs."""
    from pytest_modelprof.fit.estimate import estimate_memory

    steps = [(f, f.removesuffix("_memory")) for f in fields]

    def measure(module: Any, inputs: Any) -> dict[str, float]:
        return {
            field: estimate_memory(
                module, inputs=inputs, options=request_options(request, step)
            ).peak_bytes
            for field, step in steps
        }

    return measure


def _one_shape(shape: Any) -> tuple[int, ...]:
    if shape and isinstance(shape[0], (tuple, list)):
        return tuple(shape[0])
    return tuple(shape)


#: The peak of a training / inference step, estimated, only when a limit on one is set.
MEMORY_COLLECTOR = JsonCollector(
    MEMORY,
    measure_with=memory_evidence,
    needs="a training or inference step estimated on tensors without data",
)
