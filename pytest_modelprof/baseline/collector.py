"""Collectors: the measurements beyond the one capture, registered by the package that owns them.

A :class:`~pytest_modelprof.baseline.metric.Metric` whose number the capture cannot give names
its collector by key (``Metric(..., collector="llm")``); the package that measures it
(``llm/gate.py``, ``fit/gate.py``, ``predict/gate.py``, ``instructions/gate.py``, and the gate's
own timing, compile, sweep and fvcore in ``gate/collect.py``) implements :class:`Collector`
under that key, and the gate's registry imports them (:data:`pytest_modelprof.gate.collect.
BUILTIN_COLLECTORS`; a session adds its own with the ``pytest_modelprof_register_collectors``
hook). Each collector carries its own rules: when it runs, what it measures (its evidence, a
type of its own), which metric values the evidence gives, what a baseline keeps of it and what
a rewrite keeps of the stored one, and the check rows it judges itself. The gate runs them all
alike and names none.

Standard library only: the plugin reads the metric table, which names collectors by key, at
start-up; the types named here are imported for annotations only.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar

from pytest_modelprof.units import Number

if TYPE_CHECKING:
    from pytest_modelprof.baseline.check import Check
    from pytest_modelprof.baseline.compare import Policy
    from pytest_modelprof.baseline.document import BaselineDocument
    from pytest_modelprof.baseline.tolerance import Budget, Tolerance
    from pytest_modelprof.schema import ModelProfile

__all__ = [
    "Measure",
    "Collector",
    "CollectorRequest",
    "CollectorLimits",
    "CollectorRules",
    "JsonCollector",
    "EvidenceData",
]

#: Evidence as a baseline keeps it: plain JSON (numbers, strings, lists, dicts).
EvidenceData = Mapping[str, Any]
E = TypeVar("E")


class CollectorRequest(Protocol):
    """What a collector reads of the profiled model (the gate's ``ProfileRequest``)."""

    @property
    def model(self) -> Any: ...  # the user's module, or a model name
    @property
    def input_shape(self) -> Any: ...
    @property
    def inputs(self) -> Any: ...  # the user's tensors, if the test passed them
    @property
    def device(self) -> str | None: ...
    @property
    def name(self) -> str | None: ...
    @property
    def dtype(self) -> str | None: ...
    @property
    def include_backward(self) -> bool: ...
    @property
    def llm(self) -> tuple[tuple[str, Any], ...] | None: ...
    @property
    def step(self) -> tuple[tuple[str, Any], ...]: ...
    def engine_kwargs(self) -> dict[str, Any]: ...


class CollectorLimits(Protocol):
    """What a collector reads of the test's limits (the gate's ``Limits``)."""

    @property
    def tolerances(self) -> Mapping[str, Tolerance]: ...
    @property
    def budgets(self) -> Mapping[str, Budget]: ...
    @property
    def explicit(self) -> frozenset[str]: ...
    @property
    def fvcore(self) -> bool: ...
    @property
    def max_fvcore_delta(self) -> Tolerance: ...
    @property
    def timing_fails(self) -> bool | None: ...
    @property
    def timing_rounds(self) -> int: ...
    @property
    def growth(self) -> Mapping[str, float]: ...
    @property
    def compile_dynamic(self) -> bool | None: ...
    def limited(self, metric: str) -> bool: ...


@dataclass(frozen=True)
class Measure:
    """What a collector is given for one profiled model of one test."""

    request: CollectorRequest
    limits: CollectorLimits
    #: This collector's metrics that carry a limit which is not "off".
    limited: frozenset[str] = frozenset()
    #: The test's ``sweep=`` axes, if any.
    sweep: Mapping[str, Sequence[int]] | None = None
    #: This collector's evidence in the baseline (``None`` when updating or when there is none).
    stored: EvidenceData | None = None


def any_limit(call: Measure) -> bool:
    """The default "when": a limit on one of the collector's metrics is set (and not "off")."""
    return bool(call.limited)


class Collector(Protocol[E]):
    """One measurement beyond the capture and its rules; ``E`` is its evidence."""

    @property
    def name(self) -> str:
        """The key the metric rows name (and the baseline keeps its evidence under)."""
        ...

    @property
    def needs(self) -> str:
        """What the measurement needs, in words, for "not measured" messages and the docs."""
        ...

    def wanted(self, call: Measure) -> bool:
        """Whether this test asks for the measurement (they cost time)."""
        ...

    def measure(self, call: Measure) -> E | None:
        """The evidence, or ``None`` when nothing was measured."""
        ...

    def values(self, evidence: E) -> Mapping[str, Number]:
        """The metric values this evidence gives, by metric name."""
        ...

    def stored(self, evidence: E) -> EvidenceData | None:
        """What a baseline keeps of the evidence (``None``: nothing)."""
        ...

    def loaded(self, data: EvidenceData) -> E:
        """The evidence again, from what a baseline kept."""
        ...

    def kept(self, stored: EvidenceData | None, new: E, limits: CollectorLimits) -> E:
        """Rewriting a baseline: the evidence to write (the stored one while the new one is
        within the measurement's noise, so the file of an unchanged model stays as it was)."""
        ...

    def judged(self, evidence: E | None) -> frozenset[str]:
        """The table metrics its :meth:`checks` judge instead of the plain comparison."""
        ...

    def checks(
        self,
        evidence: E | None,
        current: BaselineDocument,
        baseline: BaselineDocument | None,
        limits: CollectorLimits,
        policy: Policy,
    ) -> Sequence[Check]:
        """The rows of its own rule (none for a collector whose metrics are table metrics)."""
        ...

    def on_profile(self, profile: ModelProfile, evidence: E) -> ModelProfile:
        """The profile the record carries, with what the evidence adds to it."""
        ...

    def on_record(self, evidence: E) -> Mapping[str, EvidenceData]:
        """Record fields the reports read (``timing``: the rounds a chart draws)."""
        ...

    def facts(self, evidence: E) -> Mapping[str, str]:
        """Fields of the baseline's environment the measurement depends on (the CPU)."""
        ...


class CollectorRules(Generic[E]):
    """The rules most collectors share, for a :class:`Collector` to inherit: runs when one of its
    metrics is limited, keeps nothing in the baseline, rewrites with the new evidence, judges
    nothing itself, adds nothing to the profile or the record."""

    def wanted(self, call: Measure) -> bool:
        return any_limit(call)

    def stored(self, evidence: E) -> EvidenceData | None:
        return None

    def kept(self, stored: EvidenceData | None, new: E, limits: CollectorLimits) -> E:
        return new

    def judged(self, evidence: E | None) -> frozenset[str]:
        return frozenset()

    def checks(
        self,
        evidence: E | None,
        current: BaselineDocument,
        baseline: BaselineDocument | None,
        limits: CollectorLimits,
        policy: Policy,
    ) -> Sequence[Check]:
        return ()

    def on_profile(self, profile: ModelProfile, evidence: E) -> ModelProfile:
        return profile

    def on_record(self, evidence: E) -> Mapping[str, EvidenceData]:
        return {}

    def facts(self, evidence: E) -> Mapping[str, str]:
        return {}


def _entries(evidence: EvidenceData) -> Mapping[str, Number]:
    return evidence


@dataclass(frozen=True)
class JsonCollector(CollectorRules[EvidenceData]):
    """A :class:`Collector` whose evidence is plain JSON, kept as is in the baseline's
    ``measured[name]``; each rule a function (the defaults suit most measurements).

    ``values`` turns evidence into metric values (by default the evidence's entries named like
    the metrics); ``keep`` is the rewrite rule (by default the new evidence); ``store=False``
    keeps nothing in the baseline.
    """

    name: str
    measure_with: Callable[[Measure], EvidenceData | None]
    when: Callable[[Measure], bool] = any_limit
    values_of: Callable[[EvidenceData], Mapping[str, Number]] = _entries
    keep: Callable[[EvidenceData | None, EvidenceData, CollectorLimits], EvidenceData] | None = None
    store: bool = True
    needs: str = ""

    def wanted(self, call: Measure) -> bool:
        return self.when(call)

    def measure(self, call: Measure) -> EvidenceData | None:
        return self.measure_with(call)

    def values(self, evidence: EvidenceData) -> Mapping[str, Number]:
        found = self.values_of(evidence)
        return {
            k: v
            for k, v in found.items()
            if isinstance(v, (int, float)) and not isinstance(v, bool)
        }

    def stored(self, evidence: EvidenceData) -> EvidenceData | None:
        return dict(evidence) if self.store else None

    def loaded(self, data: EvidenceData) -> EvidenceData:
        return data

    def kept(
        self, stored: EvidenceData | None, new: EvidenceData, limits: CollectorLimits
    ) -> EvidenceData:
        return new if self.keep is None else self.keep(stored, new, limits)
