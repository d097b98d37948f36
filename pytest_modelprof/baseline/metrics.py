"""The metric table: every gated number, its getter, its direction, its limits and its unit.

Adding a metric means adding one row here (and, for a new kind of measurement, its collector);
settings, the CLI, the ini file, the marker, :func:`~pytest_modelprof.baseline.compare.compare`
and every renderer read the table or the check rows built from it. A getter returns ``None``
when the profile does not measure the metric; a limit on such a metric fails the test with
"not measured" (see :mod:`pytest_modelprof.gate.evaluate`), it is never silently ignored.

Standard library only: the plugin builds its options from this table at start-up.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, overload

from pytest_modelprof.baseline.tolerance import Exact, Ignore, Relative, Tolerance
from pytest_modelprof.units import format_bytes, format_count, parse_bytes, parse_quantity

if TYPE_CHECKING:
    from pytest_modelprof.schema import ModelProfile

__all__ = [
    "Direction",
    "Collector",
    "Metric",
    "MetricTable",
    "METRICS",
    "METRICS_BY_NAME",
    "LIMIT_KEYS",
    "GROWTH_LIMITS",
    "metric_values",
]

Direction = Literal["lower", "higher"]  # which way is *better*
#: How a metric is measured: ``capture`` (the one ATen capture), ``partition`` (the fused-graph
#: analysis over it), ``timing`` (only when a latency limit asks), ``compile`` (Dynamo, only when
#: a compile limit asks). A limit on a metric switches its collector on for that test.
Collector = Literal["capture", "partition", "timing", "compile", "inductor", "instructions"]
Number = int | float


def _ms(value: float) -> str:
    return f"{value:.3g} ms"


def _ratio(value: float) -> str:
    return f"{value:.3g} FLOP/B"


def _plain(value: float) -> str:
    return f"{value:g}"


def _parse_ms(value: str | float | int) -> float:
    if isinstance(value, str):
        text = value.strip().lower().removesuffix("ms").strip()
        return float(text)
    return float(value)


def _field(name: str) -> Callable[[ModelProfile], Number | None]:
    def get(profile: ModelProfile) -> Number | None:
        value = getattr(profile, name, None)
        return value if isinstance(value, (int, float)) and not isinstance(value, bool) else None

    get.__name__ = f"get_{name}"
    return get


def _partition(name: str) -> Callable[[ModelProfile], Number | None]:
    """A number from ``profile.partition`` (``None`` for profiles taken without it)."""

    def get(profile: ModelProfile) -> Number | None:
        summary = profile.partition
        value = getattr(summary, name, None) if summary is not None else None
        return value if isinstance(value, (int, float)) and not isinstance(value, bool) else None

    get.__name__ = f"get_partition_{name}"
    return get


def _compiled(name: str) -> Callable[[ModelProfile], Number | None]:
    """A number from ``profile.compile_health`` (``None`` unless a compile limit asked)."""

    def get(profile: ModelProfile) -> Number | None:
        health = getattr(profile, "compile_health", None)
        value = getattr(health, name, None) if health is not None else None
        return value if isinstance(value, (int, float)) and not isinstance(value, bool) else None

    get.__name__ = f"get_compile_{name}"
    return get


def _seconds(value: float) -> str:
    return f"{value:.3g} s"


def _instructions(value: float) -> str:
    # Four digits from a million on: a 0.1 % change still shows.
    if value >= 1e6:
        return f"{value / 1e6:,.4g} M instructions"
    return f"{value:,.0f} instructions"


def _instruction_count(profile: ModelProfile) -> Number | None:
    """Instructions per forward call, or per training step for a training-graph profile."""
    counts = getattr(profile, "instructions", None)
    if counts is None:
        return None
    if getattr(profile, "include_backward", False) and counts.training_step is not None:
        return int(counts.training_step)
    return int(counts.forward) if counts.forward is not None else None


@dataclass(frozen=True)
class Metric:
    """One gated number. ``delta_key``/``budget_key`` are the limit names users type."""

    name: str  # key in baseline files and summary rows
    label: str  # what the terminal prints
    getter: Callable[[ModelProfile], Number | None]
    direction: Direction
    delta_key: str
    default_delta: Tolerance
    formatter: Callable[[float], str]
    budget_key: str | None = None
    budget_parser: Callable[[str | float | int], float] = parse_quantity
    layer_field: str | None = None  # LayerStats field for the "layers that grew most" diff
    summary: bool = True  # a column of the terminal summary
    collector: Collector = "capture"
    # Derived metrics move whenever their inputs move: a drop whose inputs all held or improved
    # is no regression (arithmetic intensity falls when FLOPs fall faster than bytes).
    derived_from: tuple[str, ...] = ()
    # Counts that depend on kernels (sizes of secondary outputs, decompositions, fusion rules):
    # when the baseline comes from another environment, a change warns instead of failing.
    kernel_dependent: bool = False

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


# Counted metrics are deterministic, so the built-in tolerance is exact in the worse direction:
# any growth fails until the user sets a tolerance, and a change that makes no cost worse never
# fails (improvements fail only under --modelprof-strict). Arithmetic intensity is derived from
# FLOPs and bytes, so it is judged only when ``max_ai_drop`` is set. Latency is noisy, so it is
# measured and judged only when a latency limit is set.
_BUILTIN: tuple[Metric, ...] = (
    Metric(
        name="flops",
        label="FLOPs",
        getter=_field("total_flops"),
        direction="lower",
        delta_key="max_flops_delta",
        default_delta=Exact(),
        formatter=lambda v: format_count(v, "FLOPs"),
        budget_key="max_flops",
        layer_field="flops",
    ),
    Metric(
        name="macs",
        label="MACs",
        getter=_field("total_macs"),
        direction="lower",
        delta_key="max_macs_delta",
        default_delta=Exact(),
        formatter=lambda v: format_count(v, "MACs"),
        layer_field="macs",
        summary=False,
    ),
    Metric(
        name="params",
        label="params",
        getter=_field("total_params"),
        direction="lower",
        delta_key="max_params_delta",
        default_delta=Exact(),
        formatter=lambda v: format_count(v),
        budget_key="max_params",
        layer_field="params",
    ),
    Metric(
        name="memory",
        label="memory",
        getter=_field("total_memory"),
        direction="lower",
        delta_key="max_memory_delta",
        default_delta=Exact(),
        formatter=format_bytes,
        budget_key="max_memory",
        budget_parser=parse_bytes,
        layer_field="memory",
        kernel_dependent=True,
    ),
    Metric(
        name="peak_memory",
        label="peak memory",
        getter=_field("peak_activation_bytes"),
        direction="lower",
        delta_key="max_peak_memory_delta",
        default_delta=Exact(),
        formatter=format_bytes,
        kernel_dependent=True,
    ),
    Metric(
        name="arithmetic_intensity",
        label="AI",
        getter=_field("arithmetic_intensity"),
        direction="higher",
        delta_key="max_ai_drop",
        default_delta=Ignore(),
        formatter=_ratio,
        derived_from=("flops", "memory"),
    ),
    # Fused kernels (analysis.partition): a broken fusion adds subgraphs at equal FLOPs.
    Metric(
        name="subgraphs",
        label="subgraphs",
        getter=_partition("num_subgraphs"),
        direction="lower",
        delta_key="max_subgraphs_delta",
        default_delta=Exact(),
        formatter=_plain,
        kernel_dependent=True,
        collector="partition",
    ),
    # Topological levels of the subgraph DAG: the model's sequential depth.
    Metric(
        name="stages",
        label="stages",
        getter=_partition("num_stages"),
        direction="lower",
        delta_key="max_stages_delta",
        default_delta=Exact(),
        formatter=_plain,
        summary=False,
        kernel_dependent=True,
        collector="partition",
    ),
    # Not measured yet: the runtime timing issue provides ``latency_ms``.
    Metric(
        name="latency_ms",
        label="latency",
        getter=_field("latency_ms"),
        direction="lower",
        delta_key="max_latency_delta",
        default_delta=Ignore(),
        formatter=_ms,
        budget_key="max_latency_ms",
        budget_parser=_parse_ms,
        summary=False,
        collector="timing",
    ),
    # torch.compile health (pytest_modelprof.compile): measured only when one of these limits
    # is set. Not kernel-dependent: the capture mode flips to "real" exactly when a model gains
    # a .item() break, and that must fail, not warn. Inductor's kernel count is.
    Metric(
        name="graphs",
        label="compiled graphs",
        getter=_compiled("graphs"),
        direction="lower",
        delta_key="max_graphs_delta",
        default_delta=Exact(),
        formatter=_plain,
        summary=False,
        collector="compile",
    ),
    Metric(
        name="graph_breaks",
        label="graph breaks",
        getter=_compiled("graph_breaks"),
        direction="lower",
        delta_key="max_graph_breaks_delta",
        default_delta=Exact(),
        formatter=_plain,
        budget_key="max_graph_breaks",
        summary=False,
        collector="compile",
    ),
    Metric(
        name="recompiles",
        label="recompiles",
        getter=_compiled("recompiles"),
        direction="lower",
        delta_key="max_recompiles_delta",
        default_delta=Exact(),
        formatter=_plain,
        budget_key="max_recompiles",
        summary=False,
        collector="compile",
    ),
    Metric(
        name="kernels",
        label="Inductor kernels",
        getter=_compiled("kernels"),
        direction="lower",
        delta_key="max_kernels_delta",
        default_delta=Exact(),
        formatter=_plain,
        summary=False,
        kernel_dependent=True,
        collector="inductor",
    ),
    # A timing: ignored unless a limit is set, and a slowdown warns unless timing_strict.
    Metric(
        name="compile_s",
        label="compile time",
        getter=_compiled("compile_s"),
        direction="lower",
        delta_key="max_compile_time_delta",
        default_delta=Ignore(),
        formatter=_seconds,
        summary=False,
        collector="inductor",
    ),
    # CPU instructions under callgrind (pytest_modelprof.instructions): measured only when a
    # limit is set (a session pays about a minute to start valgrind). Counts repeat to well
    # under 0.1 %, so the default tolerance is small; they depend on the CPU and torch's
    # kernels, so another CPU or torch warns instead of failing.
    Metric(
        name="instructions",
        label="instructions",
        getter=_instruction_count,
        direction="lower",
        delta_key="max_instructions_delta",
        default_delta=Relative(0.01),
        formatter=_instructions,
        budget_key="max_instructions",
        summary=False,
        kernel_dependent=True,
        collector="instructions",
    ),
)



class MetricTable(Sequence[Metric]):
    """The registered metrics, in table order. Iterating gives the metrics.

    :meth:`extended` adds metrics for the duration of a ``with`` block (how a test, or a
    collector under development, adds a metric without touching anything else).
    """

    def __init__(self, metrics: Sequence[Metric]) -> None:
        self._metrics: list[Metric] = []
        for metric in metrics:
            self._add(metric)

    def _add(self, metric: Metric) -> None:
        taken = {m.name for m in self._metrics}
        keys = {k for m in self._metrics for k in (m.delta_key, m.budget_key) if k}
        if metric.name in taken:
            raise ValueError(f"metric {metric.name!r} is already registered")
        clash = {metric.delta_key, metric.budget_key} & keys
        if clash:
            raise ValueError(f"limit name {sorted(k for k in clash if k)} is already taken")
        self._metrics.append(metric)

    @overload
    def __getitem__(self, index: int) -> Metric: ...
    @overload
    def __getitem__(self, index: slice) -> Sequence[Metric]: ...
    def __getitem__(self, index: int | slice) -> Metric | Sequence[Metric]:
        return self._metrics[index]

    def __len__(self) -> int:
        return len(self._metrics)

    def by_name(self, name: str) -> Metric | None:
        """The metric called ``name``, if registered."""
        return next((m for m in self._metrics if m.name == name), None)

    def limit_keys(self) -> dict[str, Metric]:
        """Every delta and budget limit name, mapped to its metric."""
        out = {m.delta_key: m for m in self._metrics}
        out.update({m.budget_key: m for m in self._metrics if m.budget_key})
        return out

    @contextmanager
    def extended(self, *metrics: Metric) -> Iterator[MetricTable]:
        """Register ``metrics`` inside the block; they are removed again on exit."""
        before = list(self._metrics)
        try:
            for metric in metrics:
                self._add(metric)
            yield self
        finally:
            self._metrics[:] = before


METRICS = MetricTable(_BUILTIN)


class _ByName(Mapping[str, Metric]):
    """A live name -> metric view of :data:`METRICS`."""

    def __getitem__(self, key: str) -> Metric:
        metric = METRICS.by_name(key)
        if metric is None:
            raise KeyError(key)
        return metric

    def __iter__(self) -> Iterator[str]:
        return (m.name for m in METRICS)

    def __len__(self) -> int:
        return len(METRICS)


class _LimitKeys(Mapping[str, Metric]):
    """A live limit name -> metric view of :data:`METRICS`."""

    def __getitem__(self, key: str) -> Metric:
        return METRICS.limit_keys()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(METRICS.limit_keys())

    def __len__(self) -> int:
        return len(METRICS.limit_keys())


METRICS_BY_NAME: Mapping[str, Metric] = _ByName()

#: Scaling-sweep limits (marker ``sweep=``): limit name -> the swept metric whose fitted growth
#: exponent it bounds. Here, not in ``sweep.py``, so the plugin can read it without torch.
GROWTH_LIMITS: Mapping[str, str] = {
    "max_flops_growth_exponent": "flops",
    "max_memory_growth_exponent": "memory",
    "max_peak_memory_growth_exponent": "peak_activation_bytes",
    "max_latency_growth_exponent": "latency_ms",
}

#: Every limit name a user may type, mapped to its metric (follows :meth:`MetricTable.extended`).
LIMIT_KEYS: Mapping[str, Metric] = _LimitKeys()


def metric_values(profile: ModelProfile) -> dict[str, Number]:
    """The measured metrics of one profile, by metric name (unmeasured ones are left out)."""
    out: dict[str, Number] = {}
    for metric in METRICS:
        value = metric.getter(profile)
        if value is not None:
            out[metric.name] = value
    return out
