"""The metric table: every gated number, its getter, its direction, its limits and its unit.

Adding a metric means adding one row here (and, for a new kind of measurement, its collector);
settings, the CLI, the ini file, the marker, :func:`~pytest_modelprof.baseline.compare.compare`
and every renderer read the table or the check rows built from it. A getter returns ``None``
when the profile does not measure the metric; a limit on such a metric fails the test with an
``unmeasured`` row (:mod:`pytest_modelprof.baseline.compare`), it is never silently ignored.

Standard library only: the plugin builds its options from this table at start-up.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TYPE_CHECKING, Final

from pytest_modelprof.baseline.llm_metrics import LLM, LLM_METRICS
from pytest_modelprof.baseline.memory_metrics import MEMORY_METRICS
from pytest_modelprof.baseline.metric import Direction, Metric, MetricTable
from pytest_modelprof.baseline.predicted_metrics import PREDICTED, PREDICTED_METRICS
from pytest_modelprof.baseline.tolerance import Exact, Ignore, Relative
from pytest_modelprof.units import Number, format_bytes, format_count, parse_bytes, parse_time

if TYPE_CHECKING:
    from pytest_modelprof.schema import ModelProfile

__all__ = [
    "Direction",
    "Metric",
    "MetricTable",
    "BUILTIN_METRICS",
    "active_metrics",
    "use_metrics",
    "TIMING",
    "COMPILE",
    "LLM",
    "PREDICTED",
    "growth_fields",
    "growth_labels",
    "metric_values",
]


#: The keys of the collectors these rows name; each is implemented and registered where it is
#: measured (gate/collect.py: timing and compile; instructions/gate.py), see baseline/collector.py.
#: Calibration-normalised timing rounds, only when a latency limit asks. Its rows have a rule of
#: their own (a bootstrap at the limit, gate/judge.py), so its evidence gives no table value.
TIMING: Final = "timing"
#: torch.compile health (Dynamo; Inductor too when kernels or compile time are limited).
COMPILE: Final = "compile"
#: CPU instructions per call under valgrind's callgrind (pytest_modelprof.instructions).
INSTRUCTIONS: Final = "instructions"


def _ms(value: float) -> str:
    return f"{value:.3g} ms"


def _ratio(value: float) -> str:
    return f"{value:.3g} FLOP/B"


def _plain(value: float) -> str:
    return f"{value:g}"


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


# Counted metrics are deterministic, so the built-in tolerance is exact in the worse direction:
# any growth fails until the user sets a tolerance, and a change that makes no cost worse never
# fails (improvements fail only under fail_on_improvement). Arithmetic intensity is derived from
# FLOPs and bytes, so it is judged only when ``max_intensity_delta`` is set. Latency is noisy,
# so it is measured and judged only when a latency limit is set.
_BUILTIN: tuple[Metric, ...] = (
    Metric(
        name="flops",
        integer=True,
        label="FLOPs",
        getter=_field("total_flops"),
        direction="lower",
        delta_key="max_flops_delta",
        default_delta=Exact(),
        formatter=lambda v: format_count(v, "FLOPs"),
        budget_key="max_flops",
        layer_field="flops",
        growth_key="max_flops_growth",
        sweep_field="flops",
    ),
    Metric(
        name="macs",
        integer=True,
        label="MACs",
        getter=_field("total_macs"),
        direction="lower",
        delta_key="max_macs_delta",
        default_delta=Exact(),
        formatter=lambda v: format_count(v, "MACs"),
        layer_field="macs",
        summary=False,
        sweep_field="macs",  # fitted by a sweep, with no growth limit of its own
    ),
    Metric(
        name="params",
        integer=True,
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
        name="traffic",
        integer=True,
        label="traffic",
        getter=_field("total_traffic"),
        direction="lower",
        delta_key="max_traffic_delta",
        default_delta=Exact(),
        formatter=format_bytes,
        budget_key="max_traffic",
        budget_parser=parse_bytes,
        layer_field="traffic",
        kernel_dependent=True,
        growth_key="max_traffic_growth",
        sweep_field="traffic",
    ),
    Metric(
        name="peak_activations",
        integer=True,
        label="peak activations",
        getter=_field("peak_activation_bytes"),
        direction="lower",
        delta_key="max_peak_activations_delta",
        default_delta=Exact(),
        formatter=format_bytes,
        kernel_dependent=True,
        growth_key="max_peak_activations_growth",
        sweep_field="peak_activation_bytes",
        growth_label="peak act.",
    ),
    Metric(
        name="intensity",
        label="intensity",
        getter=_field("arithmetic_intensity"),
        direction="higher",
        delta_key="max_intensity_delta",
        default_delta=Ignore(),
        formatter=_ratio,
        derived_from=("flops", "traffic"),
    ),
    # Fused kernels (analysis.partition): a broken fusion adds subgraphs at equal FLOPs.
    Metric(
        name="subgraphs",
        integer=True,
        label="subgraphs",
        getter=_partition("num_subgraphs"),
        direction="lower",
        delta_key="max_subgraphs_delta",
        default_delta=Exact(),
        formatter=_plain,
        kernel_dependent=True,
    ),
    # Topological levels of the subgraph DAG: the model's sequential depth.
    Metric(
        name="stages",
        integer=True,
        label="stages",
        getter=_partition("num_stages"),
        direction="lower",
        delta_key="max_stages_delta",
        default_delta=Exact(),
        formatter=_plain,
        summary=False,
        kernel_dependent=True,
    ),
    # Measured only when a latency limit is set; judged by its own rule (gate/judge.py).
    Metric(
        name="latency",
        label="latency",
        getter=_field("latency_ms"),
        direction="lower",
        delta_key="max_latency_delta",
        default_delta=Ignore(),
        formatter=_ms,
        budget_key="max_latency",
        budget_parser=parse_time,
        summary=False,
        collector=TIMING,
        growth_key="max_latency_growth",
        sweep_field="latency_ms",
    ),
    # torch.compile health (pytest_modelprof.compile): measured only when one of these limits
    # is set. Not kernel-dependent: the capture mode flips to "real" exactly when a model gains
    # a .item() break, and that must fail, not warn. Inductor's kernel count is.
    Metric(
        name="graphs",
        integer=True,
        label="compiled graphs",
        getter=_compiled("graphs"),
        direction="lower",
        delta_key="max_graphs_delta",
        default_delta=Exact(),
        formatter=_plain,
        summary=False,
        collector=COMPILE,
    ),
    Metric(
        name="graph_breaks",
        integer=True,
        label="graph breaks",
        getter=_compiled("graph_breaks"),
        direction="lower",
        delta_key="max_graph_breaks_delta",
        default_delta=Exact(),
        formatter=_plain,
        budget_key="max_graph_breaks",
        summary=False,
        collector=COMPILE,
    ),
    Metric(
        name="recompiles",
        integer=True,
        label="recompiles",
        getter=_compiled("recompiles"),
        direction="lower",
        delta_key="max_recompiles_delta",
        default_delta=Exact(),
        formatter=_plain,
        budget_key="max_recompiles",
        summary=False,
        collector=COMPILE,
    ),
    Metric(
        name="kernels",
        integer=True,
        label="Inductor kernels",
        getter=_compiled("kernels"),
        direction="lower",
        delta_key="max_kernels_delta",
        default_delta=Exact(),
        formatter=_plain,
        summary=False,
        kernel_dependent=True,
        collector=COMPILE,
    ),
    # A timing: ignored unless a limit is set, and a slowdown warns unless timing_verdicts='fail'.
    Metric(
        name="compile_time",
        label="compile time",
        getter=_compiled("compile_time"),
        direction="lower",
        delta_key="max_compile_time_delta",
        default_delta=Ignore(),
        formatter=_seconds,
        summary=False,
        collector=COMPILE,
    ),
    # LLM serving costs (pytest_modelprof.llm): prefill and decode on meta.
    *LLM_METRICS,
    # Predicted GPU time (pytest_modelprof.predict), a calibrated model, not a measurement.
    *PREDICTED_METRICS,
    # Will it fit? (pytest_modelprof.fit): the peak of a training / inference step, estimated.
    *MEMORY_METRICS,
    # CPU instructions under callgrind (pytest_modelprof.instructions): measured only when a
    # limit is set (a session pays about a minute to start valgrind). Counts repeat to well
    # under 0.1 %, so the default tolerance is small; they depend on the CPU and torch's
    # kernels, so another CPU or torch warns instead of failing.
    Metric(
        name="instructions",
        integer=True,
        label="instructions",
        direction="lower",
        delta_key="max_instructions_delta",
        default_delta=Relative(0.01),
        formatter=_instructions,
        budget_key="max_instructions",
        summary=False,
        kernel_dependent=True,
        cpu_dependent=True,
        collector=INSTRUCTIONS,
    ),
)


#: The built-in metrics.
BUILTIN_METRICS = MetricTable(_BUILTIN)
_ACTIVE: ContextVar[MetricTable] = ContextVar("modelprof_metrics", default=BUILTIN_METRICS)


def active_metrics() -> MetricTable:
    """The metric set of the current context: the session's table inside the gate, else the
    built-in one."""
    return _ACTIVE.get()


@contextmanager
def use_metrics(table: MetricTable) -> Iterator[MetricTable]:
    """Make ``table`` the metric set inside the block (this context only)."""
    token = _ACTIVE.set(table)
    try:
        yield table
    finally:
        _ACTIVE.reset(token)


@contextmanager
def extended_metrics(*metrics: Metric) -> Iterator[MetricTable]:
    """The active table plus ``metrics``, active inside the block (see :func:`use_metrics`).

    Nothing shared changes: other threads and contexts keep their table."""
    with use_metrics(active_metrics().with_metrics(*metrics)) as table:
        yield table


def growth_fields() -> dict[str, str]:
    """Scaling-sweep limits (marker ``sweep=``) of the active table: limit name -> the profile
    field whose fitted growth exponent it bounds (each metric's ``growth_key``/``sweep_field``)."""
    return {
        key: metric.sweep_field
        for key, metric in active_metrics().growth_limits().items()
        if metric.sweep_field is not None
    }


def growth_labels() -> dict[str, str]:
    """The name of each swept profile field in a sweep's fits (``peak_activation_bytes`` ->
    ``peak act.``), from each metric's own ``sweep_field`` and labels."""
    return {m.sweep_field: m.growth_label or m.label for m in active_metrics() if m.sweep_field}


def metric_values(
    profile: ModelProfile, measured: Mapping[str, Number] | None = None
) -> dict[str, Number]:
    """The measured metrics of one profile, by metric name (unmeasured ones are left out);
    ``measured``: the values the collectors' evidence gave."""
    return active_metrics().values(profile, measured)
