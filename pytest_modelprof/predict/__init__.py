"""Predicted GPU time of a captured model: a calibrated roofline per kernel, on a CPU runner.

A prediction prices every kernel the capture stands for (:mod:`.kernels`) with a roofline whose
per-class efficiencies were fitted on published measurements (:mod:`.model`), on a GPU of the
machine table (:data:`pytest_modelprof.machines.MACHINES`). It is a model with a measured error,
not a measurement: ``calibration`` says where it was fitted and how far off it was on a table it was
not fitted on.
"""

from __future__ import annotations

from collections import defaultdict
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict

from pytest_modelprof.capture.record import Capture
from pytest_modelprof.errors import ModelprofError
from pytest_modelprof.machines import PRECISIONS, GpuSpec, machine_spec
from pytest_modelprof.predict.kernels import Kernel, eager_kernels, fused_kernels, site_texts
from pytest_modelprof.predict.model import Constants, KernelTime, kernel_time, shipped_constants

if TYPE_CHECKING:
    from pytest_modelprof.profile import Profiled

__all__ = ["Prediction", "TopKernel", "PredictionError", "predict", "predict_profile"]

KernelMode = Literal["eager", "fused"]

#: A training step (forward + backward) without a captured backward: backward does about twice
#: the forward's work (one product for the input gradient, one for the weight gradient).
TRAINING_FACTOR = 3.0


class PredictionError(ModelprofError, ValueError):
    """A prediction was asked for an unknown GPU or precision, or without a capture."""


class TopKernel(BaseModel):
    """The kernels of one module and op, with their predicted time."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str  # "module: op"
    kernel_class: str
    count: int
    ms: float
    share: float
    bound: str  # compute | memory | launch


class Prediction(BaseModel):
    """Predicted forward (and training-step) time of a model on a GPU at a precision."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    machine: str
    precision: str
    batch: int
    mode: KernelMode
    forward_ms: float
    training_step_ms: float
    training_step_estimated: bool  # True: 3x forward, no backward was captured
    samples_per_s: float
    bound_shares: dict[str, float]  # compute, memory, launch: shares of forward_ms
    kernels: int
    top_kernels: list[TopKernel]
    calibration: dict[str, Any]

    def to_json(self) -> dict[str, Any]:
        """The ``predicted`` block of ``modelprof profile --json``."""
        return self.model_dump(mode="json")


def _split(times: list[KernelTime]) -> tuple[float, dict[str, float]]:
    total = compute = memory = launch = 0.0
    for t in times:
        busy = max(t.compute_s, t.memory_s)
        total += t.seconds
        launch += t.overhead_s
        if t.bound == "compute":
            compute += busy
        else:
            memory += busy
    if total <= 0:
        return 0.0, {"compute": 0.0, "memory": 0.0, "launch": 0.0}
    return total, {"compute": compute / total, "memory": memory / total, "launch": launch / total}


def _top(times: list[KernelTime], total: float, top: int) -> list[TopKernel]:
    sums: dict[tuple[str, str], list[float]] = defaultdict(lambda: [0.0, 0.0, 0.0, 0.0, 0.0])
    for t in times:
        k = t.kernel
        row = sums[(f"{k.module or '(model)'}: {k.op}", k.cls)]
        row[0] += t.seconds
        row[1] += k.count
        row[2] += t.compute_s
        row[3] += t.memory_s
        row[4] += t.overhead_s
    ranked = sorted(sums.items(), key=lambda kv: (-kv[1][0], kv[0]))[:top]
    out = []
    for (name, cls), (secs, count, comp, mem, over) in ranked:
        bound = "launch" if over >= max(comp, mem) else "compute" if comp >= mem else "memory"
        out.append(
            TopKernel(
                name=name,
                kernel_class=cls,
                count=int(count),
                ms=secs * 1e3,
                share=secs / total if total else 0.0,
                bound=bound,
            )
        )
    return out


def predict(
    capture: Capture,
    gpu: str | GpuSpec,
    *,
    precision: str = "amp",
    batch: int = 1,
    mode: KernelMode = "eager",
    constants: Constants | None = None,
    top: int = 10,
) -> Prediction:
    """Predict ``capture``'s time on ``gpu`` at ``precision`` (``batch`` samples per forward)."""
    if precision not in PRECISIONS:
        raise PredictionError(
            f"unknown precision {precision!r}; use one of {', '.join(PRECISIONS)}"
        )
    try:
        spec = machine_spec(gpu)
    except ValueError as exc:
        raise PredictionError(str(exc)) from None
    c = constants if constants is not None else shipped_constants()
    if mode == "fused":
        kernels: list[Kernel] = fused_kernels(capture, precision)
    else:
        kernels = eager_kernels(capture.ops, site_texts(capture.sites), precision)
    forward = [kernel_time(k, spec, precision, c) for k in kernels if k.phase == "forward"]
    backward = [kernel_time(k, spec, precision, c) for k in kernels if k.phase != "forward"]
    seconds, shares = _split(forward)
    if backward:
        training = seconds + sum(t.seconds for t in backward)
    else:
        training = TRAINING_FACTOR * seconds
    return Prediction(
        machine=spec.name,
        precision=precision,
        batch=batch,
        mode=mode,
        forward_ms=seconds * 1e3,
        training_step_ms=training * 1e3,
        training_step_estimated=not backward,
        samples_per_s=batch / seconds if seconds > 0 else float("inf"),
        bound_shares=shares,
        kernels=sum(k.count for k in kernels if k.phase == "forward"),
        top_kernels=_top(forward, seconds, top),
        calibration=dict(c.calibration),
    )


def predict_profile(
    profiled: Profiled,
    gpu: str | GpuSpec,
    *,
    precision: str = "amp",
    mode: KernelMode = "eager",
    top: int = 10,
) -> Prediction:
    """:func:`predict` for a profile made in this process, with its capture
    (:func:`~pytest_modelprof.profile.profile_with_capture`)."""
    profile, capture = profiled.profile, profiled.capture
    batch = 1
    if profile.inputs and profile.inputs[0].shape:
        batch = int(profile.inputs[0].shape[0])
    return predict(capture, gpu, precision=precision, batch=batch, mode=mode, top=top)
