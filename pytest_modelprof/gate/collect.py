"""The collectors: the gate's own (timing rounds, compile health, sweeps, fvcore's count) and
the registry of every built-in one, each imported from the package that owns it.

:func:`collect` runs each collector of the registry this test wants (a metric row names its
collector by key; the sweep and the fvcore cross-check have limits that are no metrics). Each
runs only when a limit asks for it (they cost time); its evidence, a type of its own, gives the
metric values, the baseline's record of it and its rows (:func:`pytest_modelprof.gate.judge.
judge`). They import torch on first use.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from pytest_modelprof.baseline.collector import (
    Collector,
    CollectorLimits,
    CollectorRequest,
    CollectorRules,
    EvidenceData,
    JsonCollector,
    Measure,
)
from pytest_modelprof.baseline.compile_rows import compile_checks, compile_metrics
from pytest_modelprof.baseline.memory_metrics import STEP_COMPONENTS
from pytest_modelprof.baseline.metrics import COMPILE, TIMING, active_metrics, growth_fields
from pytest_modelprof.baseline.tolerance import Ignore
from pytest_modelprof.compile.gate import compile_wanted
from pytest_modelprof.compile_health import CompileHealth
from pytest_modelprof.errors import ModelprofError
from pytest_modelprof.fit.gate import MEMORY_COLLECTOR, sweep_memory
from pytest_modelprof.gate.judge import (
    FvcoreEvidence,
    fvcore_check,
    growth_checks,
    latency_checks,
    latency_tolerance,
)
from pytest_modelprof.gate.limits import Limits
from pytest_modelprof.instructions.gate import INSTRUCTIONS_COLLECTOR
from pytest_modelprof.llm.gate import LLM_COLLECTOR
from pytest_modelprof.predict.gate import PREDICTED_COLLECTOR
from pytest_modelprof.units import Number

if TYPE_CHECKING:
    from pytest_modelprof.baseline.check import Check
    from pytest_modelprof.baseline.compare import Policy
    from pytest_modelprof.baseline.document import BaselineDocument
    from pytest_modelprof.schema import ModelProfile

__all__ = [
    "BUILTIN_COLLECTORS",
    "collect",
    "stored_evidence",
    "measured_values",
]


def measure_latency(
    request: CollectorRequest, limits: CollectorLimits, stored: EvidenceData | None = None
) -> dict[str, Any] | None:
    """Calibration-normalised timing rounds, only when a latency limit (not "off") asks for them.

    Against ``stored`` rounds (the baseline's) it measures ``timing_rounds`` and more only
    while the verdict is undecided; without them (recording a baseline) it measures the most
    rounds at once, since a baseline is judged against many times.
    """
    if not limits.limited("latency"):
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
    request: CollectorRequest, limits: CollectorLimits
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
    request: CollectorRequest,
    sweep_axes: Mapping[str, Sequence[int]] | None,
    limits: CollectorLimits,
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


def _memory_points(request: CollectorRequest, limits: CollectorLimits) -> Any:
    """The memory estimate at each point, only for a memory growth limit (it costs a step)."""
    fields = [f"{s}_memory" for s in STEP_COMPONENTS]
    growth = growth_fields()
    wanted = [f for f in fields if f in {growth[k] for k in limits.growth}]
    if not wanted:
        return None
    return sweep_memory(request, wanted)


def run_fvcore(request: CollectorRequest, limits: CollectorLimits) -> FvcoreEvidence | None:
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
    request: CollectorRequest,
    limits: CollectorLimits,
    sweep_axes: Mapping[str, Sequence[int]] | None,
) -> CompileHealth | None:
    """Compile health, only when a compile limit asks; Inductor only for an Inductor limit.

    Recompiles are counted over the batch sizes of ``sweep={"batch": [...]}`` when the test
    declares one, compiled as ``torch.compile`` does by default (automatic dynamic shapes)
    unless ``compile_dynamic=True``/``False`` forces ``torch.compile(dynamic=...)``.
    """
    # A limit set to "off" asks for nothing: no Dynamo run, no Inductor compile.
    dynamo, inductor = compile_wanted(frozenset(m for m in limits.explicit if limits.limited(m)))
    if not dynamo:
        return None
    from pytest_modelprof.compile import analyze_compile  # imports torch

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


@dataclass(frozen=True)
class TimingCollector(JsonCollector):
    """Timing rounds: no table value; the latency row is judged at the limit by its own rule."""

    def kept(
        self, stored: EvidenceData | None, new: EvidenceData, limits: CollectorLimits
    ) -> EvidenceData:
        """The stored rounds while the new ones are not significantly different."""
        if stored is None:
            return new
        from pytest_modelprof.runtime import timing_to_store

        return timing_to_store(stored, new, latency_tolerance(limits))

    def judged(self, evidence: EvidenceData | None) -> frozenset[str]:
        return frozenset({"latency"}) if evidence is not None else frozenset()

    def checks(
        self,
        evidence: EvidenceData | None,
        current: BaselineDocument,
        baseline: BaselineDocument | None,
        limits: CollectorLimits,
        policy: Policy,
    ) -> Sequence[Check]:
        stored = baseline.evidence().get(self.name) if baseline is not None else None
        return latency_checks(evidence, stored, limits)

    def on_record(self, evidence: EvidenceData) -> Mapping[str, EvidenceData]:
        return {"timing": dict(evidence)}


@dataclass(frozen=True)
class SweepCollector(JsonCollector):
    """The scaling sweep: its rows (one per growth limit and axis) have a rule of their own;
    the evidence travels on the record, not in the baseline."""

    def checks(
        self,
        evidence: EvidenceData | None,
        current: BaselineDocument,
        baseline: BaselineDocument | None,
        limits: CollectorLimits,
        policy: Policy,
    ) -> Sequence[Check]:
        return growth_checks(evidence, limits)

    def on_record(self, evidence: EvidenceData) -> Mapping[str, EvidenceData]:
        return {"sweep": dict(evidence)}


def _numbers(pairs: Mapping[str, object]) -> dict[str, Number]:
    return {
        k: v for k, v in pairs.items() if isinstance(v, (int, float)) and not isinstance(v, bool)
    }


class CompileCollector(CollectorRules[CompileHealth]):
    """torch.compile health: its metrics are table metrics whose rows name the breaks
    (:func:`~pytest_modelprof.baseline.compile_rows.compile_checks`); the health joins the
    profile, and the baseline keeps it in its ``compile`` field."""

    name = COMPILE
    needs = "the model compiled with torch.compile on real tensors"

    def wanted(self, call: Measure) -> bool:
        return bool(call.limited)

    def measure(self, call: Measure) -> CompileHealth | None:
        return measure_compile(call.request, call.limits, call.sweep)

    def values(self, evidence: CompileHealth) -> Mapping[str, Number]:
        return _numbers({m: getattr(evidence, m, None) for m in compile_metrics()})

    def loaded(self, data: EvidenceData) -> CompileHealth:
        return CompileHealth.model_validate(data)

    def judged(self, evidence: CompileHealth | None) -> frozenset[str]:
        return compile_metrics()

    def checks(
        self,
        evidence: CompileHealth | None,
        current: BaselineDocument,
        baseline: BaselineDocument | None,
        limits: CollectorLimits,
        policy: Policy,
    ) -> Sequence[Check]:
        return compile_checks(current, baseline, policy, timing_fail=limits.timing_fails is True)

    def on_profile(self, profile: ModelProfile, evidence: CompileHealth) -> ModelProfile:
        return profile.model_copy(update={"compile_health": evidence})


class FvcoreCollector(CollectorRules[FvcoreEvidence]):
    """fvcore's MAC count beside ours (``fvcore=True``): a row of its own, nothing stored."""

    name = "fvcore"
    needs = "fvcore installed; one input shape or inputs="

    def wanted(self, call: Measure) -> bool:
        return call.limits.fvcore and not isinstance(call.limits.max_fvcore_delta, Ignore)

    def measure(self, call: Measure) -> FvcoreEvidence | None:
        return run_fvcore(call.request, call.limits)

    def values(self, evidence: FvcoreEvidence) -> Mapping[str, Number]:
        return {}

    def loaded(self, data: EvidenceData) -> FvcoreEvidence:
        return FvcoreEvidence(**data)

    def checks(
        self,
        evidence: FvcoreEvidence | None,
        current: BaselineDocument,
        baseline: BaselineDocument | None,
        limits: CollectorLimits,
        policy: Policy,
    ) -> Sequence[Check]:
        return fvcore_check(evidence, limits)


#: Calibration-normalised timing rounds, only when a latency limit asks (kept in the baseline's
#: ``timing`` field).
TIMING_COLLECTOR = TimingCollector(
    TIMING,
    measure_with=lambda call: measure_latency(call.request, call.limits, call.stored),
    values_of=lambda evidence: {},
    needs="the model run on real tensors, many times",
)
#: The scaling sweep: only for a test with ``sweep=`` axes and a growth limit.
SWEEP_COLLECTOR = SweepCollector(
    "sweep",
    measure_with=lambda call: run_sweep(call.request, call.sweep, call.limits),
    when=lambda call: bool(call.sweep) and bool(call.limits.growth),
    values_of=lambda evidence: {},
    store=False,
    needs="sweep= axes and a growth limit",
)

#: Every built-in collector by key, each imported from the package that owns it, in the order
#: their rows follow the table's (timing, growth, fvcore).
BUILTIN_COLLECTORS: Final[Mapping[str, Collector[Any]]] = {
    c.name: c
    for c in (
        TIMING_COLLECTOR,
        CompileCollector(),
        LLM_COLLECTOR,
        PREDICTED_COLLECTOR,
        MEMORY_COLLECTOR,
        INSTRUCTIONS_COLLECTOR,
        SWEEP_COLLECTOR,
        FvcoreCollector(),
    )
}


def collect(
    request: CollectorRequest,
    limits: Limits,
    sweep: Mapping[str, Sequence[int]] | None = None,
    stored: BaselineDocument | None = None,
    collectors: Mapping[str, Collector[Any]] = BUILTIN_COLLECTORS,
) -> dict[str, Any]:
    """Run every collector this test wants; their evidence by collector key.

    A collector runs when its ``wanted`` says so, by default when a limit on one of its metrics
    (the active metric set's rows that name its key) is set and not "off". ``stored`` is the
    baseline, whose kept evidence a collector may measure against (none when updating).
    """
    names = active_metrics().collectors()
    kept = stored.evidence() if stored is not None else {}
    out: dict[str, Any] = {}
    for key, collector in collectors.items():
        limited = frozenset(m for m in names.get(key, ()) if limits.limited(m))
        call = Measure(request, limits, limited, sweep, kept.get(key))
        if collector.wanted(call):
            evidence = collector.measure(call)
            if evidence is not None:
                out[key] = evidence
    return out


def stored_evidence(
    document: BaselineDocument, collectors: Mapping[str, Collector[Any]] = BUILTIN_COLLECTORS
) -> dict[str, Any]:
    """The evidence a stored document kept, by collector key, as each collector reads it."""
    return {
        key: collectors[key].loaded(data)
        for key, data in document.evidence().items()
        if key in collectors
    }


def measured_values(
    evidence: Mapping[str, Any], collectors: Mapping[str, Collector[Any]] = BUILTIN_COLLECTORS
) -> dict[str, Number]:
    """The metric values the collectors' evidence gives, by metric name."""
    out: dict[str, Number] = {}
    for key, found in evidence.items():
        out.update(collectors[key].values(found))
    return out
