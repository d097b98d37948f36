"""The collectors that measure more than the capture: timing rounds, sweeps, fvcore's count.

Each runs only when a limit asks for it (they cost time) and returns plain JSON-able evidence
for :func:`pytest_modelprof.gate.judge.judge`. They import torch on first use.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from pytest_modelprof.baseline.tolerance import Ignore
from pytest_modelprof.errors import ModelprofError
from pytest_modelprof.gate.judge import FvcoreEvidence, latency_tolerance
from pytest_modelprof.gate.settings import Limits, ProfileRequest

if TYPE_CHECKING:
    from collections.abc import Callable

    from pytest_modelprof.compile.health import CompileHealth
    from pytest_modelprof.instructions import InstructionCounts, InstructionServer

__all__ = [
    "measure_latency", "run_sweep", "run_fvcore", "measure_compile", "measure_instructions",
]


def measure_latency(
    request: ProfileRequest, limits: Limits, stored: Mapping[str, Any] | None = None
) -> dict[str, Any] | None:
    """Calibration-normalised timing rounds, only when a latency limit (not "off") asks for them.

    Against ``stored`` rounds (the baseline's) it measures ``timing_rounds`` and more only
    while the verdict is undecided; without them (recording a baseline) it measures the most
    rounds at once, since a baseline is judged against many times.
    """
    if not limits.wants_latency:
        return None
    from pydantic import ValidationError

    from pytest_modelprof.profile import real_model_and_inputs
    from pytest_modelprof.runtime import NormalisedTiming, measure_forward_sequential

    baseline: NormalisedTiming | None = None
    if stored is not None:
        try:
            baseline = NormalisedTiming.model_validate(stored)
        except ValidationError:  # an older calibration version: measured as a new baseline
            baseline = None
    module, inputs = real_model_and_inputs(
        request.model, input_shape=request.input_shape, inputs=request.inputs,
        device=request.device, purpose="the latency measurement",
    )
    timing = measure_forward_sequential(
        module, inputs, baseline, rounds=limits.timing_rounds, tolerance=latency_tolerance(limits)
    )
    data: dict[str, Any] = timing.model_dump(mode="json")
    return data


def run_sweep(
    request: ProfileRequest, sweep_axes: Mapping[str, Sequence[int]] | None, limits: Limits
) -> dict[str, Any] | None:
    """The scaling sweep over ``sweep=`` axes, only when a growth limit asks for it."""
    if not sweep_axes or not limits.growth:
        return None
    from pytest_modelprof.runtime.sweep import SHAPE_AXES, sweep

    rebuilt = [axis for axis in sweep_axes if axis not in SHAPE_AXES]
    if rebuilt and not isinstance(request.model, str):
        raise ModelprofError(
            f"sweep axis {rebuilt[0]!r} rebuilds the model with each value, so it needs a model "
            f"name: pass model='pkg.module:factory' (or a registered name) to the marker, or "
            f"sweep the module over {', '.join(SHAPE_AXES)} only"
        )
    result = sweep(
        request.model,
        over=sweep_axes,
        input_shape=request.input_shape,
        inputs=request.inputs,
        latency="max_latency_growth_exponent" in limits.growth,
        device=request.device,
    )
    swept: dict[str, Any] = result.model_dump(mode="json")
    return swept


def run_fvcore(request: ProfileRequest, limits: Limits) -> FvcoreEvidence | None:
    """With ``fvcore=True``: fvcore's MAC count beside ours, or why it could not be taken."""
    if not limits.fvcore or isinstance(limits.max_fvcore_delta, Ignore):
        return None
    from pytest_modelprof.analysis.fvcore import compare_with_fvcore

    shape = request.input_shape
    single = shape if shape and all(isinstance(d, int) for d in shape) else None
    if shape is not None and single is None:
        return FvcoreEvidence(
            error="fvcore=True: the fvcore cross-check takes one input shape; pass inputs= instead"
        )
    try:
        result = compare_with_fvcore(request.model, single, inputs=request.inputs)
    except ModelprofError as exc:
        return FvcoreEvidence(error=f"fvcore=True: {exc}")
    return FvcoreEvidence(
        ours_macs=result.ours_macs,
        fvcore_macs=result.fvcore_macs,
        skipped=dict(result.unsupported_ops),
    )


def measure_compile(
    request: ProfileRequest, limits: Limits, sweep_axes: Mapping[str, Sequence[int]] | None
) -> CompileHealth | None:
    """Compile health, only when a compile limit asks; Inductor only for an Inductor limit.

    Recompiles are counted over the batch sizes of ``sweep={"batch": [...]}`` when the test
    declares one, compiled as ``torch.compile`` does by default (automatic dynamic shapes)
    unless ``compile_dynamic=True``/``False`` forces ``torch.compile(dynamic=...)``.
    """
    from pytest_modelprof.compile.gate import compile_wanted

    # A limit set to "off" asks for nothing: no Dynamo run, no Inductor compile.
    dynamo, inductor = compile_wanted(frozenset(m for m in limits.explicit if limits.limited(m)))
    if not dynamo:
        return None
    from pytest_modelprof.compile import analyze_compile

    batches = list(sweep_axes.get("batch", [])) if sweep_axes else []
    return analyze_compile(
        request.model,
        request.inputs,
        input_shape=request.input_shape,
        device=request.device,
        shapes=batches,
        dynamic=limits.compile_dynamic,
        inductor=inductor,
    )


def measure_instructions(
    request: ProfileRequest, limits: Limits, server: Callable[[], InstructionServer]
) -> InstructionCounts | None:
    """CPU instructions per call under callgrind, only when an instructions limit asks.

    ``server`` gives the session's one callgrind process (started on first use). The forward
    is measured; a training-graph profile (``include_backward=True``) adds the backward and
    the training step, and its limit judges the training step.
    """
    if not limits.limited("instructions"):
        return None
    if request.device not in (None, "cpu"):
        raise ModelprofError(
            f"instructions count what the CPU executes, and this profile runs on "
            f"device={request.device!r}; measure them on the CPU (leave device= out)"
        )
    phases: tuple[Any, ...] = (
        ("forward", "backward", "training_step") if request.include_backward else ("forward",)
    )
    return server().measure(
        request.model, input_shape=request.input_shape, inputs=request.inputs, phases=phases,
        dtype=request.dtype,
    )
