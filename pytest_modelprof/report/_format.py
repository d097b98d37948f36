"""Number and text formatting shared by the view model's builders."""

from __future__ import annotations

import math
from collections.abc import Callable
from datetime import datetime

from pytest_modelprof.units import format_count, sign


def num(value: float) -> str:
    """A coordinate for SVG: two decimals, no trailing zeros."""
    text = f"{value:.2f}".rstrip("0").rstrip(".")
    return "0" if text in ("-0", "") else text



def sort_key(value: float) -> str:
    return repr(float(value))



def signed_count(value: float, unit: str, formatter: Callable[[float], str] | None) -> str:
    if value == 0:
        return "0"
    text = formatter(abs(value)) if formatter else format_count(abs(value), unit)
    return sign(value) + text



def change_of(current: float | None, baseline: float | None) -> float | None:
    if current is None or baseline is None:
        return None
    if baseline == 0:
        return 0.0 if current == 0 else math.copysign(math.inf, current)
    return (current - baseline) / abs(baseline)



def time(value: datetime | None) -> str:
    return value.strftime("%Y-%m-%d %H:%M:%S %Z").strip() if value is not None else ""



def sign_css(value: float) -> str:
    return "up" if value > 0 else ("down" if value < 0 else "")






def _nice(value: float, *, rounded: bool) -> float:
    """1, 2, 5 or 10 times a power of ten near ``value`` (Heckbert's "nice numbers")."""
    power: float = 10.0 ** math.floor(math.log10(value))
    f = value / power
    if rounded:
        m = 1 if f < 1.5 else 2 if f < 3 else 5 if f < 7 else 10
    else:
        m = 1 if f <= 1 else 2 if f <= 2 else 5 if f <= 5 else 10
    return m * power


def nice_ticks(lo: float, hi: float, count: int = 5, *, integer: bool = False) -> list[float]:
    """About ``count`` axis ticks from below ``lo`` to above ``hi``, a round step apart
    (1, 2 or 5 times a power of ten; at least 1 for an integer metric, which has no 2.6)."""
    if not hi > lo:
        return [lo]
    step = _nice(_nice(hi - lo, rounded=False) / max(1, count - 1), rounded=True)
    if integer:
        step = max(1.0, step)
    first, last = math.floor(lo / step), math.ceil(hi / step)
    # Multiples of the step, rounded so 0.1 * 3 reads 0.3 and not 0.30000000000000004.
    return [round(k * step, 12) for k in range(first, last + 1)]
