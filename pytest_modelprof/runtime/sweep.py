"""Scaling sweeps: FLOPs, traffic and latency over batch size, sequence length, input size, depth.

``sweep(model, over={"batch": [1, 8, 32]})`` profiles the model at each point (one capture per
point, plus an optional latency measurement) and fits a growth exponent per metric: the slope
of ``log(metric)`` against ``log(value)`` by least squares. Linear growth fits 1, attention over
sequence length fits 2. :func:`check_growth` is the pure gate: ``max_flops_growth=1.1``
fails a change that turns linear growth quadratic.

Shape axes (:data:`SHAPE_AXES`) change the inputs: ``batch`` is dimension 0, ``seq_len``
dimension 1 (override with ``axis_dims``), ``input_size`` the trailing spatial dimensions
(two for 4-D and larger inputs, one for 3-D). Any other axis name (``layers``, ``width``) is
passed as a keyword to the model factory or to the registry builder of a named model.
With several axes, each one is swept in turn while the others stay at their first value.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import torch
from torch import nn

from pytest_modelprof.baseline.metrics import active_metrics, growth_fields, growth_labels
from pytest_modelprof.errors import MeasurementError, SettingsError
from pytest_modelprof.runtime.sweep_inputs import (
    SHAPE_AXES,
    ModelArg,
    SweepSubject,
    for_profile,
    input_shapes,
    label_of,
)
from pytest_modelprof.runtime.timing import TimingStats, time_forward
from pytest_modelprof.schema import Frozen

__all__ = [
    "SHAPE_AXES",
    "sweep",
    "check_growth",
    "axis_values_arg",
    "format_sweep",
]

class SweepPoint(Frozen):
    """The model measured at one value of one axis."""

    axis: str
    value: int
    input_shapes: list[list[int]]
    params: int
    flops: int
    macs: int
    traffic: int
    peak_activation_bytes: int
    latency_ms: float | None = None
    latency: TimingStats | None = None
    # FLOPs by top-level child module ("(model)": ops of the model's own forward).
    module_flops: dict[str, int] = {}
    # Metrics measured by the caller's ``measure_more`` (the gate's memory estimates), by name.
    extra: dict[str, float] = {}

    def metric(self, name: str) -> float | None:
        """The value of a swept metric by name (``None`` if it was not measured)."""
        if name in self.extra:
            return float(self.extra[name])
        value = getattr(self, name, None)
        return None if value is None else float(value)


class GrowthFit(Frozen):
    """``metric ~ value ** exponent``: least-squares slope in log-log space.

    ``tail_exponent`` is the slope between the last two points: where a mix of linear and
    quadratic terms is heading (an attention model's total fits between 1 and 2 and tends to 2).
    """

    exponent: float
    intercept: float
    r2: float
    tail_exponent: float | None
    points: int


class SweepSeries(Frozen):
    """One axis swept, the others held at the base point."""

    axis: str
    values: list[int]
    points: list[SweepPoint]
    fits: dict[str, GrowthFit]
    module_fits: dict[str, GrowthFit]  # per top-level module, of its FLOPs only


class SweepResult(Frozen):
    """Every series of a sweep; ``base`` is the point the other axes were held at."""

    model: str
    base: dict[str, int]
    series: list[SweepSeries]

    def series_for(self, axis: str) -> SweepSeries:
        """The series of ``axis``; raises ``KeyError`` naming the swept axes."""
        for s in self.series:
            if s.axis == axis:
                return s
        swept = ", ".join(s.axis for s in self.series)
        raise SettingsError(f"{axis!r} was not swept; swept: {swept}")

    def exponent(self, axis: str, metric: str = "flops") -> float:
        """The fitted growth exponent of ``metric`` along ``axis``."""
        return self.series_for(axis).fits[metric].exponent


class GrowthViolation(Frozen):
    """A fitted exponent above its limit."""

    axis: str
    metric: str
    limit_key: str
    limit: float
    exponent: float
    message: str


# -- pure pieces -------------------------------------------------------------------------------

def fit_growth(xs: Sequence[float], ys: Sequence[float]) -> GrowthFit:
    """Least-squares fit of ``log y = exponent * log x + intercept``; points with y <= 0 are
    left out (a metric that is zero somewhere has no power law there)."""
    pairs = [(math.log(x), math.log(y)) for x, y in zip(xs, ys, strict=True) if x > 0 and y > 0]
    n = len(pairs)
    if n < 2:
        raise MeasurementError(
            f"a growth fit needs at least 2 points with positive values, got {n}"
        )
    mx = math.fsum(p[0] for p in pairs) / n
    my = math.fsum(p[1] for p in pairs) / n
    sxx = math.fsum((p[0] - mx) ** 2 for p in pairs)
    if sxx == 0:
        raise MeasurementError("a growth fit needs at least 2 distinct axis values")
    sxy = math.fsum((p[0] - mx) * (p[1] - my) for p in pairs)
    slope = sxy / sxx
    intercept = my - slope * mx
    ss_tot = math.fsum((p[1] - my) ** 2 for p in pairs)
    ss_res = math.fsum((p[1] - (slope * p[0] + intercept)) ** 2 for p in pairs)
    r2 = 1.0 - ss_res / ss_tot if ss_tot > 0 else 1.0
    (x1, y1), (x2, y2) = pairs[-2], pairs[-1]
    tail = (y2 - y1) / (x2 - x1) if x2 != x1 else None
    return GrowthFit(exponent=slope, intercept=intercept, r2=r2, tail_exponent=tail, points=n)


def check_growth(
    result: SweepResult, limits: Mapping[str, float | None], *, slack: float = 0.0
) -> list[GrowthViolation]:
    """Every (axis, metric) whose fitted exponent exceeds its limit by more than ``slack``.

    ``limits`` maps growth limit names (:func:`~pytest_modelprof.baseline.metrics.
    growth_fields`) to a maximum exponent (``None``: no limit).
    No hidden slack by default: a limit of 1.1 means 1.1 (pass ``slack`` to allow curvature).
    """
    out: list[GrowthViolation] = []
    for key, limit in limits.items():
        if limit is None:
            continue
        fields = growth_fields()
        metric = fields.get(key)
        if metric is None:
            known = ", ".join(fields)
            raise SettingsError(f"unknown growth limit {key!r}; known: {known}")
        for series in result.series:
            fit = series.fits.get(metric)
            if fit is None or fit.exponent <= limit + slack:
                continue
            worst = max(series.module_fits.items(), key=lambda kv: kv[1].exponent, default=None)
            where = (
                f"; fastest-growing module {worst[0]!r} (exponent {worst[1].exponent:.2f})"
                if worst is not None and metric == "flops" else ""
            )
            out.append(GrowthViolation(
                axis=series.axis, metric=metric, limit_key=key, limit=limit,
                exponent=fit.exponent,
                message=(
                    f"{metric} grows as {series.axis}^{fit.exponent:.2f} over "
                    f"{series.values[0]}..{series.values[-1]}, above {key}={limit:g}{where}"
                ),
            ))
    return out


def parse_axis_values(text: str) -> list[int]:
    """``"1,8,32"`` -> ``[1, 8, 32]`` (positive integers, at least two, strictly increasing)."""
    try:
        values = [int(v) for v in text.replace(" ", "").split(",") if v]
    except ValueError:
        raise SettingsError(
            f"expected comma-separated integers like '1,8,32', got {text!r}"
        ) from None
    if len(values) < 2:
        raise SettingsError(f"a sweep needs at least two values, got {text!r}")
    if any(v <= 0 for v in values) or values != sorted(set(values)):
        raise SettingsError(f"sweep values must be positive and increasing, got {text!r}")
    return values


def axis_values_arg(text: str) -> list[int]:
    """:func:`parse_axis_values` for ``argparse`` ``type=``: errors become usage errors."""
    import argparse

    try:
        return parse_axis_values(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def format_sweep(result: SweepResult, width: int = 100) -> str:
    """A plain-text table per axis with the fitted exponents and a bar per point, every line
    at most ``width`` columns."""
    from pytest_modelprof.textfit import Column, fit_line, layout_table, wrap_items
    from pytest_modelprof.units import format_bytes, format_count

    held = ", ".join(f"{k}={v}" for k, v in result.base.items()) or "defaults"
    lines = [f"sweep of {result.model} (others held at {held})"]
    labels = growth_labels()
    for series in result.series:
        lines.append("")
        columns = [Column(series.axis, ">"), Column("FLOPs", ">"), Column("peak act.", ">"),
                   Column("latency", ">"), Column("curve")]
        top = max(p.flops for p in series.points) or 1
        room = max(10, min(30, width - 52))  # what the figures leave of the line
        rows = [
            [str(p.value), format_count(p.flops, "FLOPs"), format_bytes(p.peak_activation_bytes),
             f"{p.latency_ms:.3g} ms" if p.latency_ms is not None else "-",
             "#" * max(1, round(room * p.flops / top)) if p.flops else ""]
            for p in series.points
        ]
        lines += layout_table(columns, rows, width, shrink=((4, 10),)).lines
        fits = [
            f"{labels.get(m, m)} ^{f.exponent:.2f}"
            + (f" (last step ^{f.tail_exponent:.2f})"
               if f.tail_exponent is not None and abs(f.tail_exponent - f.exponent) >= 0.05
               else "")
            for m, f in series.fits.items()
        ]
        lines += wrap_items(f"growth with {series.axis} (metric ~ {series.axis}^k)", fits,
                            width, "  ")
        linear = _fixed_plus_linear([p.value for p in series.points],
                                    [float(p.flops) for p in series.points])
        if linear is not None:
            # A whole-model exponent below 1 reads as sub-linear; a fixed part (a head, an
            # embedding) plus a part linear in the axis is what it usually is: say so.
            fixed, per = linear
            lines += fit_line(
                f"  FLOPs = {format_count(fixed, 'FLOPs')} + {format_count(per, 'FLOPs')} "
                f"\u00d7 {series.axis}: linear, plus a fixed part that keeps k below 1",
                width,
            )
        if len(series.module_fits) > 1:
            mods = [f"{k} ^{f.exponent:.2f}" for k, f in series.module_fits.items()]
            lines += wrap_items("FLOPs by module", mods, width, "  ")
    return "\n".join(lines) + "\n"


def _fixed_plus_linear(xs: Sequence[int], ys: Sequence[float]) -> tuple[float, float] | None:
    """``(fixed, per_unit)`` when ``y = fixed + per_unit * x`` fits every point within 0.5 %
    with a fixed part of at least 5 % of the first point; else ``None``."""
    n = len(xs)
    if n < 3 or len(set(xs)) < n:
        return None
    mx, my = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    per = sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sxx
    fixed = my - per * mx
    if per <= 0 or fixed < 0.05 * ys[0]:
        return None
    if any(abs(fixed + per * x - y) > 0.005 * y for x, y in zip(xs, ys, strict=True)):
        return None
    return fixed, per


def _module_flops(layers: Sequence[Any]) -> dict[str, int]:
    from pytest_modelprof.analysis.rollup import ROOT

    out: dict[str, int] = {}
    for layer in layers:
        name = layer.name
        if name.startswith("(") and name != ROOT:  # pseudo-layers such as "(backward)"
            continue
        top = name if name == ROOT else name.split(".")[0]
        out[top] = out.get(top, 0) + int(layer.flops)
    return {k: v for k, v in sorted(out.items()) if v}


# -- the sweep ---------------------------------------------------------------------------------

def sweep(
    model: ModelArg,
    over: Mapping[str, Sequence[int]],
    *,
    input_shape: Sequence[int] | None = None,
    inputs: Any = None,
    make_inputs: Callable[..., Any] | None = None,
    axis_dims: Mapping[str, int] | None = None,
    latency: bool = True,
    rounds: int = 10,
    warmup: int = 2,
    device: str | torch.device | None = None,
    dtype: torch.dtype | None = None,
    name: str | None = None,
    arch_kwargs: Mapping[str, Any] | None = None,
    progress: Callable[[str], None] | None = None,
    measure_more: Callable[[nn.Module, Any], Mapping[str, float]] | None = None,
) -> SweepResult:
    """Profile ``model`` at every point of ``over`` and fit growth exponents per metric.

    ``model`` is an ``nn.Module`` (shape axes only), a registry name, or a factory called with
    the non-shape axes as keywords (``lambda layers: Net(layers)``); ``arch_kwargs`` are
    builder keywords held fixed at every point (``hidden_size=64``). Inputs come from
    ``make_inputs(**point)`` if given, else from the ``inputs`` / ``input_shape`` template
    (or a named model's example inputs) with the swept dimensions changed. ``progress`` is
    told each point as it starts (``"batch=8 (2 of 3)"``). ``measure_more(module, inputs)``
    measures more metrics at each point (fitted like the rest, by the names it returns).
    """
    axes = _axes(over)
    # An axis with one value is held there (``seq_len=[32]`` beside a depth sweep), not fitted.
    swept = [a for a, vals in axes.items() if len(vals) > 1]
    if not swept:
        raise SettingsError(
            f"over={axes} needs at least one axis with two or more values to fit a growth on"
        )
    fixed = _fixed_keywords(model, axes, arch_kwargs)
    base = {a: vals[0] for a, vals in axes.items()}
    label = label_of(model, name)
    subject = SweepSubject(
        model, label=label, timed=latency, inputs=inputs, input_shape=input_shape,
        make_inputs=make_inputs, axis_dims=axis_dims, device=device, dtype=dtype, fixed=fixed,
    )

    def measure(point: dict[str, int], axis: str) -> SweepPoint:
        from pytest_modelprof.profile import profile_model

        arch = {k: v for k, v in point.items() if k not in SHAPE_AXES}
        batch = subject.inputs_at(point)
        shapes = input_shapes(batch)
        module = subject.build(arch, tuple(shapes[0]) if shapes else None)
        prof = profile_model(module, inputs=for_profile(batch), name=label)
        stats = time_forward(module, batch, rounds=rounds, warmup=warmup) if latency else None
        return SweepPoint(
            axis=axis, value=point[axis], input_shapes=shapes,
            params=prof.total_params, flops=prof.total_flops, macs=prof.total_macs,
            traffic=prof.total_traffic, peak_activation_bytes=prof.peak_activation_bytes,
            latency_ms=stats.median if stats is not None else None, latency=stats,
            module_flops=_module_flops(prof.layers),
            extra=dict(measure_more(module, batch)) if measure_more is not None else {},
        )

    series: list[SweepSeries] = []
    for axis in swept:
        values = axes[axis]
        points: list[SweepPoint] = []
        for i, value in enumerate(values, start=1):
            if progress is not None:
                progress(f"{axis}={value} ({i} of {len(values)})")
            points.append(measure({**base, axis: value}, axis))
        series.append(_series(axis, values, points))
    return SweepResult(model=label, base=base if len(axes) > 1 else {}, series=series)


def _axes(over: Mapping[str, Sequence[int]]) -> dict[str, list[int]]:
    """``over`` as lists of ints; each axis's values positive and increasing."""
    if not over:
        raise SettingsError("over= names no axis; e.g. over={'batch': [1, 8, 32]}")
    axes = {k: [int(v) for v in vals] for k, vals in over.items()}
    for axis, vals in axes.items():
        if not vals or any(v <= 0 for v in vals) or sorted(set(vals)) != vals:
            raise SettingsError(f"axis {axis!r}: need positive increasing values, got {vals}")
    return axes


def _fixed_keywords(
    model: ModelArg, axes: Mapping[str, list[int]], arch_kwargs: Mapping[str, Any] | None
) -> dict[str, Any]:
    """The builder keywords held fixed; refused where the model cannot take them."""
    arch_axes = [a for a in axes if a not in SHAPE_AXES]
    if isinstance(model, nn.Module) and arch_axes:
        raise SettingsError(
            f"axes {arch_axes} change the model itself; pass a factory (e.g. "
            f"lambda {arch_axes[0]}: MyNet({arch_axes[0]}={arch_axes[0]})) instead of a module"
        )
    fixed = dict(arch_kwargs or {})
    if fixed and isinstance(model, nn.Module):
        raise SettingsError(
            f"builder keywords {sorted(fixed)} need a model name or a factory to build with; "
            "a module is already built"
        )
    for key in fixed:
        if key in axes:
            raise SettingsError(f"{key!r} is both swept and fixed; give it once")
    return fixed


def _swept() -> tuple[str, ...]:
    """The point fields a sweep fits: each metric's ``sweep_field`` that a point measures."""
    fields = (m.sweep_field for m in active_metrics() if m.sweep_field in SweepPoint.model_fields)
    return tuple(dict.fromkeys(f for f in fields if f is not None))


def _series(axis: str, values: list[int], points: list[SweepPoint]) -> SweepSeries:
    fits: dict[str, GrowthFit] = {}
    for metric in dict.fromkeys((*_swept(), *sorted(points[0].extra))):
        ys = [p.metric(metric) for p in points]
        if all(y is not None and y > 0 for y in ys):
            fits[metric] = fit_growth(values, [float(y) for y in ys if y is not None])
    module_fits: dict[str, GrowthFit] = {}
    modules = sorted({m for p in points for m in p.module_flops})
    for mod in modules:
        ys2 = [float(p.module_flops.get(mod, 0)) for p in points]
        if all(y > 0 for y in ys2):
            module_fits[mod] = fit_growth(values, ys2)
    return SweepSeries(axis=axis, values=values, points=points, fits=fits, module_fits=module_fits)
