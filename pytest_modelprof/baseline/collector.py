"""Collectors: the measurements beyond the one capture, declared beside their metrics.

A :class:`~pytest_modelprof.baseline.metrics.Metric` whose number the capture cannot give names
its :class:`Collector` (``Metric(..., collector=Collector(...))``). The gate asks the metric set
which collectors a test wants (:func:`pytest_modelprof.gate.collect.collect`), runs those, and
the collector's evidence becomes the metric values of the profile
(:meth:`Collector.metric_values`), stored in the baseline and compared like every other metric.
Running them names none; only the gate's rules of their own read some evidence by name
(``gate/evaluate.py``: timing, sweep, fvcore, compile health, instructions). A collector does
not belong to any metric when its limits are not metrics (sweep growth, the fvcore cross-check):
the gate registers those itself.

Standard library only: the metric table (read by the plugin at start-up) holds collectors.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Measure", "Collector", "EvidenceData"]

#: A collector's evidence: plain JSON (numbers, strings, lists, dicts), kept in the baseline.
EvidenceData = Mapping[str, Any]
Number = int | float


@dataclass(frozen=True)
class Measure:
    """What a collector is given for one profiled model of one test."""

    # The gate's ProfileRequest: .model (a module or a name), .inputs, .input_shape, .device,
    # .dtype. Typed loosely here: the request is the gate's, one layer up.
    request: Any
    # The gate's Limits (.limited(metric), .timing_rounds, .compile_dynamic, .growth, ...).
    limits: Any
    #: This collector's metrics that carry a limit which is not "off".
    limited: frozenset[str] = frozenset()
    #: The test's ``sweep=`` axes, if any.
    sweep: Mapping[str, Sequence[int]] | None = None
    #: This collector's evidence in the baseline (``None`` when updating or when there is none).
    stored: EvidenceData | None = None


def any_limit(call: Measure) -> bool:
    """The default "when": a limit on one of the collector's metrics is set (and not "off")."""
    return bool(call.limited)


@dataclass(frozen=True)
class Collector:
    """One measurement: when it runs, what it measures, how its evidence becomes values.

    ``measure`` is a callable, or ``"package.module:function"`` imported on first use (so a
    table that names a torch-based measurement stays importable without torch). It returns
    JSON-able evidence, or ``None`` when it measured nothing. ``values`` turns evidence into
    metric values (by metric name); by default the evidence's entries named like the metrics
    are the values. ``store`` says where a baseline keeps the evidence: ``"measured"`` (the
    document's ``measured[name]``), the name of an older document field (``"timing"``,
    ``"compile"``), or ``None`` (not kept).
    """

    name: str
    measure: Callable[[Measure], EvidenceData | None] | str
    when: Callable[[Measure], bool] = any_limit
    values: Callable[[EvidenceData], Mapping[str, Number]] | None = None
    store: str | None = "measured"
    #: What the measurement needs, in words, for "not measured" messages and the docs.
    needs: str = ""
    _resolved: list[Callable[[Measure], EvidenceData | None]] = field(
        default_factory=list, compare=False, repr=False
    )

    def run(self, call: Measure) -> EvidenceData | None:
        """Measure when :attr:`when` says so; ``None`` otherwise."""
        if not self.when(call):
            return None
        return self._function()(call)

    def _function(self) -> Callable[[Measure], EvidenceData | None]:
        if not isinstance(self.measure, str):
            return self.measure
        if not self._resolved:
            module, _, name = self.measure.partition(":")
            self._resolved.append(getattr(importlib.import_module(module), name))
        return self._resolved[0]

    def metric_values(self, evidence: EvidenceData, metrics: Sequence[str]) -> dict[str, Number]:
        """The values of ``metrics`` this evidence gives (numbers only; absent ones left out)."""
        found = self.values(evidence) if self.values is not None else evidence
        return {
            name: found[name]
            for name in metrics
            if isinstance(found.get(name), (int, float)) and not isinstance(found[name], bool)
        }
