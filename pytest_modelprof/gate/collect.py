"""The collectors that measure more than the capture: timing rounds, sweeps, fvcore's count.

:func:`collect` asks the active metric set which collectors a test wants (each metric names
its :class:`~pytest_modelprof.baseline.collector.Collector`), adds the two whose limits are not
metrics (the sweep, the fvcore cross-check) and runs them. Each runs only when a limit asks for
it (they cost time) and returns plain JSON-able evidence for :func:`pytest_modelprof.gate.
judge.judge`. They import torch on first use.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from pytest_modelprof.baseline.collector import Collector, EvidenceData, Measure
from pytest_modelprof.baseline.metrics import GROWTH_LIMITS, active_metrics
from pytest_modelprof.baseline.tolerance import Ignore
from pytest_modelprof.errors import ModelprofError
from pytest_modelprof.gate.judge import FvcoreEvidence, latency_tolerance
from pytest_modelprof.gate.settings import Limits, ProfileRequest

if TYPE_CHECKING:
    from pytest_modelprof.compile_health import CompileHealth

__all__ = [
    "SWEEP",
    "FVCORE",
    "collect",
    "latency_evidence",
    "compile_evidence",
    "measure_latency",
    "run_sweep",
    "run_fvcore",
    "measure_compile",
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

    from pytest_modelprof.capture.real import real_model_and_inputs
    from pytest_modelprof.runtime import NormalisedTiming, measure_forward_sequential

    baseline: NormalisedTiming | None = None
    if stored is not None:
        try:
            baseline = NormalisedTiming.model_validate(stored)
        except ValidationError:  # an older calibration version: measured as a new baseline
            baseline = None
    fallback: str | None = None
    if baseline is not None:
        paired, fallback = _measure_paired(request, limits)
        if paired is not None:
            return paired
    module, inputs = real_model_and_inputs(
        request.model, input_shape=request.input_shape, inputs=request.inputs,
        device=request.device, purpose="the latency measurement",
    )
    timing = measure_forward_sequential(
        module, inputs, baseline, rounds=limits.timing_rounds, tolerance=latency_tolerance(limits)
    )
    data: dict[str, Any] = timing.model_dump(mode="json")
    if fallback is not None:
        data["fallback"] = fallback
    return data


def _measure_paired(
    request: ProfileRequest, limits: Limits
) -> tuple[dict[str, Any] | None, str | None]:
    """(evidence, None) from the session's base side, or (None, why not) where the run asked
    for one and this test cannot have it, or (None, None) where the run did not ask."""
    from pytest_modelprof.runtime.paired import PairedUnavailable, paired_base

    source = paired_base()
    if source is None:
        return None, None
    if request.inputs is not None:
        return None, "the test passes its own inputs, which the base process cannot receive"
    try:
        timing, comparison = source.measure(
            request.model, input_shape=request.input_shape, device=request.device,
            rounds=limits.timing_rounds, tolerance=latency_tolerance(limits),
        )
    except PairedUnavailable as exc:
        return None, str(exc)
    return {
        "paired": timing.model_dump(mode="json"),
        "comparison": comparison.model_dump(mode="json"),
    }, None


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
        latency="max_latency_growth" in limits.growth,
        device=request.device,
        measure_more=_memory_points(request, limits),
    )
    swept: dict[str, Any] = result.model_dump(mode="json")
    return swept


def _memory_points(request: ProfileRequest, limits: Limits) -> Any:
    """The memory estimate at each point, only for a memory growth limit (it costs a step)."""
    from pytest_modelprof.baseline.memory_metrics import STEP_COMPONENTS

    fields = [f"{s}_memory" for s in STEP_COMPONENTS]
    wanted = [f for f in fields if f in {GROWTH_LIMITS[k] for k in limits.growth}]
    if not wanted:
        return None
    from pytest_modelprof.fit.gate import sweep_memory

    return sweep_memory(request, wanted)


def run_fvcore(request: ProfileRequest, limits: Limits) -> FvcoreEvidence | None:
    """With ``fvcore=True``: fvcore's MAC count beside ours, or why it could not be taken."""
    if not limits.fvcore or isinstance(limits.max_fvcore_delta, Ignore):
        return None
    from pytest_modelprof.runtime.fvcore import compare_with_fvcore

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


def latency_evidence(call: Measure) -> EvidenceData | None:
    """The timing collector (:data:`~pytest_modelprof.baseline.metrics.TIMING`)."""
    return measure_latency(call.request, call.limits, call.stored)


def compile_evidence(call: Measure) -> EvidenceData | None:
    """The compile collector (:data:`~pytest_modelprof.baseline.metrics.COMPILE`)."""
    health = measure_compile(call.request, call.limits, call.sweep)
    return health.model_dump(mode="json") if health is not None else None


def _sweep_evidence(call: Measure) -> EvidenceData | None:
    return run_sweep(call.request, call.sweep, call.limits)


def _fvcore_evidence(call: Measure) -> EvidenceData | None:
    found = run_fvcore(call.request, call.limits)
    return dataclasses.asdict(found) if found is not None else None


#: The scaling sweep: only for a test with ``sweep=`` axes and a growth limit. Its rows (one per
#: growth limit and axis) have a rule of their own; the evidence travels on the record.
SWEEP = Collector(
    "sweep",
    measure=_sweep_evidence,
    when=lambda call: bool(call.sweep) and bool(call.limits.growth),
    values=lambda evidence: {},
    store=None,
)
#: fvcore's MAC count beside ours: only with ``fvcore=True``.
FVCORE = Collector(
    "fvcore",
    measure=_fvcore_evidence,
    when=lambda call: bool(call.limits.fvcore)
    and not isinstance(call.limits.max_fvcore_delta, Ignore),
    values=lambda evidence: {},
    store=None,
)


def collect(
    request: ProfileRequest,
    limits: Limits,
    sweep: Mapping[str, Sequence[int]] | None = None,
    stored: Mapping[str, EvidenceData] | None = None,
) -> dict[str, EvidenceData]:
    """Run every collector this test wants; their evidence by collector name.

    The metric set (the session's, see :func:`~pytest_modelprof.baseline.metrics.use_metrics`)
    names the collectors; a collector runs when its ``when`` says so, by default when a limit
    on one of its metrics is set and not "off". ``stored`` is the baseline's evidence.
    """
    wanted = [
        (collector, frozenset(m for m in names if limits.limited(m)))
        for collector, names in active_metrics().collectors().values()
    ]
    wanted += [(SWEEP, frozenset()), (FVCORE, frozenset())]
    out: dict[str, EvidenceData] = {}
    for collector, limited in wanted:
        call = Measure(
            request, limits, limited, sweep, (stored or {}).get(collector.name)
        )
        evidence = collector.run(call)
        if evidence is not None:
            out[collector.name] = evidence
    return out
