"""The type of one gated number (:class:`Metric`) and of a set of them (:class:`MetricTable`).

The built-in rows and the active set live in :mod:`pytest_modelprof.baseline.metrics`.
Standard library only: the plugin reads metrics at start-up.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, overload

from pytest_modelprof.baseline.tolerance import Tolerance
from pytest_modelprof.errors import SettingsError
from pytest_modelprof.units import Number, parse_quantity

if TYPE_CHECKING:
    from pytest_modelprof.schema import ModelProfile

__all__ = ["Direction", "Metric", "MetricTable"]

Direction = Literal["lower", "higher"]  # which way is *better*


def _not_on_profile(profile: ModelProfile) -> None:
    """The getter of a measured metric: its value comes from its collector's evidence."""
    return None


@dataclass(frozen=True, kw_only=True)
class Metric:
    """One gated number. ``delta_key``/``budget_key`` are the limit names users type."""

    name: str  # key in baseline files and summary rows
    label: str  # what the terminal prints
    getter: Callable[[ModelProfile], Number | None] = _not_on_profile
    direction: Direction
    delta_key: str
    default_delta: Tolerance
    formatter: Callable[[float], str]
    budget_key: str | None = None
    budget_parser: Callable[[str | float | int], float] = parse_quantity
    layer_field: str | None = None  # BaselineLayer field for the "layers that grew most" detail
    summary: bool = True  # a column of the terminal summary
    # A count (FLOPs, bytes, calls): a baseline must hold it as a non-negative integer, so a
    # hand-edited ``1e308`` or ``true`` is refused instead of judged.
    integer: bool = False
    # The key of the measurement beyond the capture this metric needs (None: the capture or the
    # partition over it gives it); the collector registered under it (baseline/collector.py)
    # gives the value when ``getter`` finds none on the profile.
    collector: str | None = None
    # Derived metrics move whenever their inputs move: a drop whose inputs all held or improved
    # is no regression (arithmetic intensity falls when FLOPs fall faster than bytes).
    derived_from: tuple[str, ...] = ()
    # Counts that depend on kernels (sizes of secondary outputs, decompositions, fusion rules):
    # when the baseline comes from another environment, a change warns instead of failing.
    kernel_dependent: bool = False
    # Counts the CPU decides (instructions): another CPU model or flags warns for these only.
    cpu_dependent: bool = False
    # A scaling sweep fits this metric's growth: ``growth_key`` is the limit users type
    # (``max_flops_growth``), ``sweep_field`` the profile field the sweep fits.
    growth_key: str | None = None
    sweep_field: str | None = None
    growth_label: str | None = None  # its name in a sweep's text table, when not ``label``
    # A part of another metric's total (``"train_memory"``): the HTML report stacks the parts
    # of one total in a bar, baseline above current; the row carries it (``detail["stack"]``).
    stack: str | None = None

    def value(
        self, profile: ModelProfile, measured: Mapping[str, Number] | None = None
    ) -> Number | None:
        """The metric on this profile, else what its collector measured (``measured``: the
        values the collectors' evidence gave, by metric name)."""
        found = self.getter(profile)
        if found is not None or self.collector is None or not measured:
            return found
        return measured.get(self.name)

    def format(self, value: float | None) -> str:
        """The value in human units, ``"n/a"`` when not measured."""
        return "n/a" if value is None else self.formatter(value)

    def worse_by(self, current: float, baseline: float) -> float:
        """Relative change in the worse direction: ``+0.1`` is 10 % worse, ``-0.1`` 10 % better.

        A zero baseline is explicit: no change is 0, any worse value is ``inf``.
        """
        worse = current - baseline if self.direction == "lower" else baseline - current
        if baseline == 0:
            if worse == 0:
                return 0.0
            return float("inf") if worse > 0 else float("-inf")
        return worse / abs(baseline)


class MetricTable(Sequence[Metric]):
    """A set of metrics, in table order; immutable. Iterating gives the metrics.

    :meth:`with_metrics` gives a new table with more metrics (the plugin builds one per session
    from the ``pytest_modelprof_register_metrics`` hook); ``baseline.metrics.use_metrics``
    makes a table the one the gate reads in the current context (thread, task), never
    changing another's.
    """

    def __init__(self, metrics: Sequence[Metric]) -> None:
        self._metrics: tuple[Metric, ...] = ()
        for metric in metrics:
            self._metrics = (*self._metrics, self._checked(metric))

    def _all(self) -> tuple[Metric, ...]:
        return self._metrics

    def _checked(self, metric: Metric) -> Metric:
        taken = {m.name for m in self._metrics}
        keys = {k for m in self._metrics for k in (m.delta_key, m.budget_key, m.growth_key) if k}
        if metric.name in taken:
            raise SettingsError(f"metric {metric.name!r} is already registered")
        clash = {metric.delta_key, metric.budget_key, metric.growth_key} & keys
        if clash:
            raise SettingsError(f"limit name {sorted(k for k in clash if k)} is already taken")
        return metric

    def with_metrics(self, *metrics: Metric) -> MetricTable:
        """A new table: these metrics, then ``metrics`` (a clash of names raises)."""
        return MetricTable((*self._all(), *metrics))

    @overload
    def __getitem__(self, index: int) -> Metric: ...
    @overload
    def __getitem__(self, index: slice) -> Sequence[Metric]: ...
    def __getitem__(self, index: int | slice) -> Metric | Sequence[Metric]:
        return self._all()[index]

    def __len__(self) -> int:
        return len(self._all())

    def by_name(self, name: str) -> Metric | None:
        """The metric called ``name``, if registered."""
        return next((m for m in self._all() if m.name == name), None)

    def limit_keys(self) -> dict[str, Metric]:
        """Every delta and budget limit name, mapped to its metric."""
        out = {m.delta_key: m for m in self._all()}
        out.update({m.budget_key: m for m in self._all() if m.budget_key})
        return out

    def growth_limits(self) -> dict[str, Metric]:
        """Every growth limit name (``max_flops_growth``), to its metric."""
        return {m.growth_key: m for m in self._all() if m.growth_key and m.sweep_field}

    def collectors(self) -> dict[str, tuple[str, ...]]:
        """Each collector key the metrics name, with the names of its metrics, in table order."""
        out: dict[str, tuple[str, ...]] = {}
        for metric in self._all():
            if metric.collector is not None:
                out[metric.collector] = (*out.get(metric.collector, ()), metric.name)
        return out

    def values(
        self, profile: ModelProfile, measured: Mapping[str, Number] | None = None
    ) -> dict[str, Number]:
        """The measured metrics of one profile by name (unmeasured ones are left out);
        ``measured`` (metric name -> value) gives the values of the collectors' metrics."""
        out: dict[str, Number] = {}
        for metric in self._all():
            value = metric.value(profile, measured)
            if value is not None:
                out[metric.name] = value
        return out
