"""``modelprof sweep``'s text: a table per axis with its growth exponents, fitted to a width."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from pytest_modelprof.baseline.metrics import growth_labels
from pytest_modelprof.textfit import Column, fit_line, layout_table, wrap_items
from pytest_modelprof.units import format_bytes, format_count

if TYPE_CHECKING:
    from pytest_modelprof.runtime.sweep_result import SweepResult

__all__ = ["format_sweep"]


def format_sweep(result: SweepResult, width: int = 100) -> str:
    """A plain-text table per axis with the fitted exponents and a bar per point, every line
    at most ``width`` columns."""
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
