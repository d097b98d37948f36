"""Number and text formatting shared by the view model's builders."""

from __future__ import annotations

import math
from collections.abc import Callable
from datetime import datetime

from pytest_modelprof.units import format_count


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
    return ("+" if value > 0 else "\u2212") + text



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



def short(name: str, width: int = 30) -> str:
    if len(name) <= width:
        return name
    keep = (width - 1) // 2
    return name[:keep] + "\u2026" + name[-(width - 1 - keep):]
