"""Human units (``4.09 GMACs``, ``97.5 MB``) and budgets such as ``"9G"`` or ``"120MB"``."""

from __future__ import annotations

import re

from pytest_modelprof.errors import SettingsError, did_you_mean

__all__ = [
    "Number", "format_count", "format_bytes", "sign", "parse_quantity", "parse_bytes", "parse_time"
]

#: A figure: a count, bytes, a time or a ratio.
Number = int | float

# Decimal (SI) prefixes throughout: 1 MB = 10**6 bytes, as model cards and fvcore print them.
_PREFIXES = [(10**15, "P"), (10**12, "T"), (10**9, "G"), (10**6, "M"), (10**3, "K")]
_PARSE_PREFIX = {"": 1, "K": 10**3, "M": 10**6, "G": 10**9, "T": 10**12, "P": 10**15}
_QUANTITY = re.compile(r"^\s*([0-9]*\.?[0-9]+(?:[eE][+-]?[0-9]+)?)\s*([A-Za-z]*)\s*$")


def sign(value: float) -> str:
    """The sign written before a change's magnitude: ``+``, ``-`` or nothing for zero. The one
    minus sign of all output is ASCII ``-`` (as ``f"{x:+.1f}"`` writes it): terminals show it
    and ``grep`` finds it."""
    return "+" if value > 0 else ("-" if value < 0 else "")


def format_count(value: float, unit: str = "", digits: int = 3) -> str:
    """``4_089_184_256, "MACs"`` -> ``"4.09 GMACs"``; ``digits`` significant figures."""
    sign = "-" if value < 0 else ""
    # Round first, then choose the prefix: 999_960 is "1 M", not "1000 K".
    mag = float(f"{abs(value):.{digits}g}")
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
    if "e" in text:
        text = f"{x:.0f}"
    return text


# Unit words accepted after the number (case-insensitive), by the unit a caller asks for.
_UNIT_WORDS: dict[str, frozenset[str]] = {
    "": frozenset(
        {"flop", "flops", "mac", "macs", "param", "params", "ops", "op", "b", "byte", "bytes"}
    ),
    "B": frozenset({"b", "byte", "bytes"}),
}


def parse_quantity(text: str | float | int, *, unit: str = "") -> float:
    """``"9G"`` -> ``9e9``; ``"4.1 GFLOPs"`` -> ``4.1e9``; ``"9 MACs"`` -> ``9``.

    ``unit="B"`` accepts only byte units (``"120MB"``, ``"5 bytes"``); the default accepts any
    known unit word (FLOPs, MACs, params, ops, bytes) or a bare prefix.
    """
    if isinstance(text, (int, float)) and not isinstance(text, bool):
        return float(text)
    if not isinstance(text, str):
        raise SettingsError(f"expected a number or a string like '9G', got {text!r}")
    match = _QUANTITY.match(text)
    if match is None:
        raise SettingsError(
            f"cannot read {text!r} as a quantity; write e.g. '9G', '30M' or '120MB'"
        )
    number, word = match.group(1), match.group(2)
    words = _UNIT_WORDS.get(unit, frozenset({unit.lower()}))
    # A whole unit word first ("MACs" is MACs, not mega-"ACs"), then prefix + unit word.
    if word == "" or word.lower() in words:
        return float(number)
    prefix, rest = word[0].upper(), word[1:]
    if prefix in _PARSE_PREFIX and (rest == "" and unit == "" or rest.lower() in words):
        return float(number) * _PARSE_PREFIX[prefix]
    expected = (
        "bytes (e.g. '120MB')" if unit == "B" else "a count (e.g. '9G', '4.1 GFLOPs', '30M params')"
    )
    raise SettingsError(f"cannot read {text!r}: unknown unit {word!r}; expected {expected}")


def parse_bytes(text: str | float | int) -> float:
    """``"120MB"`` -> ``1.2e8``; also accepts ``"1.5GiB"``-style binary units."""
    if isinstance(text, str):
        m = re.match(r"^\s*([0-9]*\.?[0-9]+)\s*([KMGTP])iB\s*$", text, re.IGNORECASE)
        if m:
            power = "KMGTP".index(m.group(2).upper()) + 1
            return float(m.group(1)) * float(1024**power)
    return parse_quantity(text, unit="B")


_TIME = re.compile(r"^\s*([0-9]*\.?[0-9]+(?:[eE][+-]?[0-9]+)?)\s*(us|µs|ms|s|min)\s*$")
_SECONDS = {"us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "min": 60.0}


def parse_time(value: str | float | int) -> float:
    """``"12ms"`` -> ``12.0``, ``"0.5s"`` -> ``500.0``: a time with its unit, in milliseconds.

    A bare number is refused: ``12`` could be seconds or milliseconds, so the unit is written.
    """
    text = value.strip() if isinstance(value, str) else value
    match = _TIME.match(text.lower()) if isinstance(text, str) else None
    if match is None:
        number = _QUANTITY.match(str(text))
        bare = number is not None and not number.group(2)
        hint = did_you_mean(str(text), [f"{text}ms"], cutoff=0.0) if bare else ""
        raise SettingsError(
            f"{text!r} is no time{hint or '.'} Write its unit: us, ms, s or min "
            f"(e.g. '12ms', '0.5s')"
        )
    return float(match.group(1)) * _SECONDS[match.group(2)] * 1e3
