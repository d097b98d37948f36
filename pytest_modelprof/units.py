"""Human units: ``4.09 GMACs``, ``97.5 MB``, and parsing of budgets such as ``"9G"`` or ``"120MB"``."""

from __future__ import annotations

import re

__all__ = ["format_count", "format_bytes", "parse_quantity", "parse_bytes"]

# Decimal (SI) prefixes throughout: 1 MB = 10**6 bytes, as model cards and fvcore print them.
_PREFIXES = [(10**15, "P"), (10**12, "T"), (10**9, "G"), (10**6, "M"), (10**3, "K")]
_PARSE_PREFIX = {"": 1, "K": 10**3, "M": 10**6, "G": 10**9, "T": 10**12, "P": 10**15}
_QUANTITY = re.compile(r"^\s*([0-9]*\.?[0-9]+(?:[eE][+-]?[0-9]+)?)\s*([kKmMgGtTpP]?)\s*([A-Za-z/]*)\s*$")


def format_count(value: float, unit: str = "", digits: int = 3) -> str:
    """``4_089_184_256, "MACs"`` -> ``"4.09 GMACs"``; ``digits`` significant figures."""
    sign = "-" if value < 0 else ""
    mag = abs(value)
    for factor, prefix in _PREFIXES:
        if mag >= factor:
            return f"{sign}{_sig(mag / factor, digits)} {prefix}{unit}".rstrip()
    return f"{sign}{_sig(mag, digits)} {unit}".rstrip()


def format_bytes(value: float, digits: int = 3) -> str:
    """``97_500_000`` -> ``"97.5 MB"`` (decimal prefixes)."""
    return format_count(value, "B", digits)


def _sig(x: float, digits: int) -> str:
    if x == int(x) and x < 10**digits:
        return str(int(x))
    text = f"{x:.{digits}g}"
    if "e" in text:  # 999.96 with 3 digits rounds up to 1e+03; print it plainly
        text = f"{x:.0f}"
    return text


def parse_quantity(text: str | float | int, *, unit: str = "") -> float:
    """``"9G"`` -> ``9e9``; ``"4.1 GFLOPs"`` -> ``4.1e9``; plain numbers pass through.

    ``unit`` is an optional suffix to accept (case-insensitive), e.g. ``"B"`` for bytes.
    """
    if isinstance(text, (int, float)) and not isinstance(text, bool):
        return float(text)
    if not isinstance(text, str):
        raise ValueError(f"expected a number or a string like '9G', got {text!r}")
    match = _QUANTITY.match(text)
    if match is None:
        raise ValueError(f"cannot read {text!r} as a quantity; write e.g. '9G', '30M' or '120MB'")
    number, prefix, suffix = match.groups()
    if suffix and unit and suffix.lower() not in {unit.lower(), unit.lower() + "s"}:
        if not _is_unit_word(suffix):
            raise ValueError(f"unknown unit {suffix!r} in {text!r}; expected {unit!r}")
    elif suffix and not unit and not _is_unit_word(suffix):
        raise ValueError(f"unknown unit {suffix!r} in {text!r}")
    return float(number) * _PARSE_PREFIX[prefix.upper()]


def parse_bytes(text: str | float | int) -> float:
    """``"120MB"`` -> ``1.2e8``; also accepts ``"1.5GiB"``-style binary units."""
    if isinstance(text, str):
        m = re.match(r"^\s*([0-9]*\.?[0-9]+)\s*([KMGTP])iB\s*$", text, re.IGNORECASE)
        if m:
            power = "KMGTP".index(m.group(2).upper()) + 1
            return float(m.group(1)) * 1024**power
    return parse_quantity(text, unit="B")


def _is_unit_word(suffix: str) -> bool:
    return suffix.lower() in {"b", "flop", "flops", "mac", "macs", "param", "params", "ops"}
