"""How a change between a baseline figure and the current one reads: ``+15.4 %``,
``+1.2 GFLOPs (+15.4 %)``, a dash where a side is missing. Pure and torch-free."""

from __future__ import annotations

from typing import Final

from pytest_modelprof.baseline.metrics import Metric
from pytest_modelprof.units import sign

__all__ = ["DASH", "relative_change", "format_change", "change_text", "delta_text"]

DASH: Final = "\u2013"


def relative_change(current: float | None, baseline: float | None) -> float | None:
    """``(current - baseline) / |baseline|``; from a zero baseline any change is infinite."""
    if current is None or baseline is None:
        return None
    if baseline == 0:
        if current == 0:
            return 0.0
        return float("inf") if current > 0 else float("-inf")
    return (current - baseline) / abs(baseline)


def format_change(change: float | None) -> str:
    """``0.154`` -> ``+15.4 %``; infinities (from a zero baseline) read ``+inf %``."""
    if change is None:
        return "n/a"
    if change in (float("inf"), float("-inf")):
        return f"{'+' if change > 0 else '-'}inf %"
    if change != 0 and round(change * 100, 1) == 0:
        return f"{change * 100:+.2g} %"  # two significant digits: never "+0.0 %" for a change
    return f"{change * 100:+.1f} %"


def _signed(metric: Metric, diff: float) -> str:
    return sign(diff) + metric.format(abs(diff))


def change_text(metric: Metric, current: float, baseline: float) -> str:
    """``+15.4 %``; a change under 0.1 % also gives its size (``+16.4 KFLOPs, +0.023 %``), as
    both sides then print the same (``72 MFLOPs -> 72 MFLOPs``)."""
    change = relative_change(current, baseline)
    text = format_change(change)
    if current != baseline and change is not None and round(change * 100, 1) == 0:
        return f"{_signed(metric, current - baseline)}, {text}"
    return text


def delta_text(metric: Metric, current: float | None, baseline: float | None) -> str:
    """``+1.2 GFLOPs (+15.4 %)``, ``0``, or a dash when a side is missing."""
    if current is None or baseline is None:
        return DASH
    diff = current - baseline
    if diff == 0:
        return "0"
    return f"{_signed(metric, diff)} ({format_change(relative_change(current, baseline))})"
