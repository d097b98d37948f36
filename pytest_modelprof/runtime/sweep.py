"""Scaling sweeps: FLOPs, traffic and latency over batch size, sequence length, input size, depth.

``sweep(model, over={"batch": [1, 8, 32]})`` profiles the model at each point (one capture per
point, plus an optional latency measurement) and fits a growth exponent per metric: the slope
of ``log(metric)`` against ``log(value)`` by least squares. Linear growth fits 1, attention over
sequence length fits 2 (:mod:`~pytest_modelprof.runtime.growth_fit`). The result and its
gate are in :mod:`~pytest_modelprof.runtime.sweep_result`, the text in
:mod:`~pytest_modelprof.report.sweep_text`.

Shape axes (:data:`SHAPE_AXES`) change the inputs: ``batch`` is dimension 0, ``seq_len``
dimension 1 (override with ``axis_dims``), ``input_size`` the trailing spatial dimensions
(two for 4-D and larger inputs, one for 3-D). Any other axis name (``layers``, ``width``) is
passed as a keyword to the model factory or to the registry builder of a named model.
With several axes, each one is swept in turn while the others stay at their first value.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import torch
from torch import nn

from pytest_modelprof.analysis.rollup import ROOT
from pytest_modelprof.baseline.metrics import active_metrics
from pytest_modelprof.errors import SettingsError
from pytest_modelprof.profile import profile_model
from pytest_modelprof.runtime.growth_fit import GrowthFit, fit_growth
from pytest_modelprof.runtime.sweep_inputs import (
    SHAPE_AXES,
    ModelArg,
    SweepSubject,
    for_profile,
    input_shapes,
    label_of,
)
from pytest_modelprof.runtime.sweep_result import SweepPoint, SweepResult, SweepSeries
from pytest_modelprof.runtime.timing import time_forward

__all__ = [
    "SHAPE_AXES",
    "sweep",
]


def _module_flops(layers: Sequence[Any]) -> dict[str, int]:
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
