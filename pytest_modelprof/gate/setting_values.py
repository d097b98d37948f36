"""Parsers of the settings' values (switches, timing rounds and verdicts, growth exponents).

Each raises ``ValueError`` with what was expected; :meth:`~pytest_modelprof.gate.limits.
Limits.with_values` turns it into a :class:`~pytest_modelprof.errors.SettingsError` naming where
the value came from. Standard library only.
"""

from __future__ import annotations

import math
from typing import Final

from pytest_modelprof.errors import SettingsError, did_you_mean

__all__ = [
    "TIMING_VERDICTS",
    "parse_bool",
    "parse_exponent",
    "parse_rounds",
    "parse_verdicts",
]

#: ``timing_verdicts``: every timing limit fails, or every one only warns (unset: a decisive
#: latency regression fails, the rest warn).
TIMING_VERDICTS: Final = ("fail", "warn")


def parse_verdicts(raw: object) -> str | None:
    """``"fail"``, ``"warn"``, or ``None`` for ``"auto"``."""
    text = str(raw).strip().lower() if isinstance(raw, str) else raw
    if text == "auto":
        return None
    if text not in TIMING_VERDICTS:
        hint = did_you_mean(str(text), TIMING_VERDICTS) if isinstance(text, str) else ""
        raise SettingsError(
            f"expected 'fail' or 'warn' (or None: a decisive regression fails){hint}"
        )
    return str(text)


def parse_bool(raw: object) -> bool:
    """A switch: a bool, or true/false, yes/no, on/off, 1/0."""
    if isinstance(raw, bool):
        return raw
    if isinstance(raw, str):
        text = raw.strip().lower()
        if text in {"1", "true", "yes", "on"}:
            return True
        if text in {"0", "false", "no", "off", ""}:
            return False
    raise SettingsError(f"expected true or false, got {raw!r}")


#: The most timing rounds a setting may ask for: more would run for hours (a typo, not a wish).
MAX_TIMING_ROUNDS: Final = 100_000


def parse_rounds(raw: object) -> int:
    """Timing rounds: a whole number from 10 to :data:`MAX_TIMING_ROUNDS`."""
    if isinstance(raw, int) and not isinstance(raw, bool):
        value = raw
    else:
        try:
            value = int(str(raw)) if not isinstance(raw, bool) else -1
        except ValueError:
            value = -1
    if not 10 <= value <= MAX_TIMING_ROUNDS:
        raise SettingsError(f"timing_rounds must be an integer from 10 to {MAX_TIMING_ROUNDS:,}")
    return value


def parse_exponent(raw: object) -> float:
    """A growth exponent: a finite number > 0."""
    if isinstance(raw, bool):
        raise SettingsError("expected a growth exponent such as 1.1")
    try:
        value = float(raw) if isinstance(raw, (int, float)) else float(str(raw))
    except OverflowError:
        value = math.inf
    if not (value > 0 and math.isfinite(value)):
        raise SettingsError("a growth exponent must be a finite number > 0")
    return value
