"""Tolerances: small typed values with one grammar for the marker, the CLI and the ini file.

A metric's *delta tolerance* is one of :class:`Exact`, :class:`Relative` or :class:`Ignore`;
an absolute *budget* (``max_flops="9G"``) is a :class:`Budget`. Both are plain frozen values,
so a :class:`~pytest_modelprof.baseline.compare.Policy` built from them is hashable and printable.

This module imports only the standard library: the plugin parses settings with it at start-up.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

from pytest_modelprof.errors import SettingsError, did_you_mean, suggestion

__all__ = [
    "Exact",
    "Relative",
    "Ignore",
    "Tolerance",
    "Budget",
    "parse_tolerance",
    "parse_budget",
    "format_tolerance",
    "is_off",
    "shown",
]


@dataclass(frozen=True)
class Exact:
    """Any change in the worse direction is a regression (the same as ``Relative(0)``)."""

    def allows(self, worse_by: float) -> bool:
        """Whether a relative change of ``worse_by`` (positive = worse) is within tolerance."""
        return worse_by <= 0.0

    def __str__(self) -> str:
        return "exact"


@dataclass(frozen=True)
class Relative:
    """A change of up to ``fraction`` of the baseline in the worse direction is fine."""

    fraction: float

    def __post_init__(self) -> None:
        if not (self.fraction >= 0.0 and math.isfinite(self.fraction)):
            raise SettingsError(f"a tolerance must be a finite fraction >= 0, got {self.fraction}")

    def allows(self, worse_by: float) -> bool:
        """Whether a relative change of ``worse_by`` (positive = worse) is within tolerance."""
        return worse_by <= self.fraction

    def __str__(self) -> str:
        return f"{self.fraction * 100:+.1f} %" if self.fraction else "exact"


@dataclass(frozen=True)
class Ignore:
    """The metric is recorded but never judged against the baseline."""

    def allows(self, worse_by: float) -> bool:
        """Always true: an ignored metric cannot regress."""
        return True

    def __str__(self) -> str:
        return "ignored"


Tolerance = Exact | Relative | Ignore


@dataclass(frozen=True)
class Budget:
    """An absolute ceiling (``max_flops="9G"``) that holds with or without a baseline."""

    limit: float

    def __post_init__(self) -> None:
        if not (self.limit >= 0.0 and math.isfinite(self.limit)):
            raise SettingsError(f"a budget must be a finite number >= 0, got {self.limit}")


#: The one spelling that switches a check off.
IGNORE: Final = "ignore"
#: Other words people write for "off": refused with a pointer to ``"ignore"``, so no spelling
#: switches a check off by accident (``None`` in Python means "the default" instead).
_OFF_TYPOS: Final = frozenset({"none", "off", "false", "no", "null", "disable", "disabled"})
_EXACT: Final = frozenset({"exact", "0", "0%", "0.0"})
_PERCENT: Final = re.compile(r"^\s*([0-9]*\.?[0-9]+(?:e[+-]?[0-9]+)?)\s*%\s*$", re.IGNORECASE)
_SHOWN: Final = 40  # characters of a value an error message quotes


def shown(value: object) -> str:
    """``repr(value)``, shortened when long: ``1000000000… (401 digits)``, so an absurd value
    still makes a one-line error."""
    try:
        text = repr(value)
    except ValueError:  # an int past Python's digit limit for str()
        size = int(value.bit_length() * math.log10(2)) + 1 if isinstance(value, int) else "?"
        return f"an integer of about {size} digits"
    if len(text) <= _SHOWN:
        return text
    bare = str(value).strip()
    if bare.isdigit():
        quote = "'" if isinstance(value, str) else ""
        return f"{quote}{bare[:10]}\u2026{quote} ({len(bare)} digits)"
    return f"{text[:_SHOWN]}\u2026 ({len(text)} characters)"


def _not_a_switch() -> ValueError:
    return ValueError(
        f"a limit is not a switch; write {IGNORE!r} to turn the check off, or a fraction such "
        f"as 0.1 or '10%'"
    )


def is_off(value: object) -> bool:
    """Whether ``value`` is :data:`IGNORE`; raises ``ValueError`` for another word for "off"
    (``"none"``, ``"off"``, ``"false"``) or a boolean, naming the one spelling."""
    if isinstance(value, bool):
        raise _not_a_switch()
    if not isinstance(value, str):
        return False
    text = value.strip().lower()
    if text in _OFF_TYPOS:
        raise SettingsError(
            f"{IGNORE!r} is the one spelling that turns a check off{suggestion([IGNORE])}"
        )
    return text == IGNORE


def _number(value: str | float) -> float:
    """``float(value)``, where an int too large for a float is infinite (not an OverflowError)."""
    try:
        return float(value)
    except OverflowError:
        return math.inf


def _typo_hint(fraction: float) -> str:
    """For a delta of 1 or more written as a number: what it allows and what was likely meant."""
    percent = f"{fraction * 100:g}"
    head = f"that would allow +{percent} %; a delta is a fraction of the baseline (0.1 = 10 %)"
    if fraction < 100:
        meant = fraction / 100
        text = f"{meant:.2f}" if float(f"{meant:.2f}") == meant else f"{meant:g}"
        head += f"{suggestion([text])} Write"
        return f"{head} '{percent}%' if you mean +{percent} %"
    return f"{head}; write '{percent}%' if you mean +{percent} %"


def parse_tolerance(value: object) -> Tolerance:
    """``0.1`` or ``"10%"`` -> ``Relative(0.1)``; ``0``/``"exact"`` -> ``Exact()``;
    ``"ignore"`` -> ``Ignore()``. Raises ``ValueError`` saying what is wrong.

    ``None`` and booleans are no limits (the caller treats ``None`` as "not given", which
    means the default); a delta of 1 or more must be written as a percentage (``"150%"``),
    since ``10`` is far more often a typo for 10 % than a wish for +1000 %."""
    if isinstance(value, (Exact, Relative, Ignore)):
        return value
    if value is None:
        raise SettingsError(
            f"None is no limit; leave the argument out for the default, or write {IGNORE!r}"
        )
    if is_off(value):
        return Ignore()
    if isinstance(value, (int, float)):
        fraction, percent = _number(value), False
    elif isinstance(value, str):
        text = value.strip().lower()
        if text in _EXACT:
            return Exact()
        match = _PERCENT.match(text)
        try:
            fraction = _number(match.group(1)) / 100 if match else _number(text)
        except ValueError:
            raise SettingsError(
                "expected a fraction such as 0.1, a percentage such as '10%', 'exact' or "
                f"{IGNORE!r}{did_you_mean(text, ('exact', IGNORE))}"
            ) from None
        percent = match is not None
    else:
        raise SettingsError(
            f"expected a fraction such as 0.1 or '10%', not a {type(value).__name__}"
        )
    if not (math.isfinite(fraction) and fraction >= 0):
        raise SettingsError("a tolerance must be a finite fraction >= 0")
    if fraction >= 1 and not percent:
        raise SettingsError(_typo_hint(fraction))
    return Exact() if fraction == 0 else Relative(fraction)


def parse_budget(value: object, parse: Callable[[str | float | int], float]) -> Budget | None:
    """``"9G"`` -> ``Budget(9e9)``, ``parse`` reading the unit; ``"ignore"`` -> ``None``.

    ``None`` is "not given" to the caller, as for a tolerance; it reads as no budget here."""
    if value is None:
        return None
    if isinstance(value, Budget):
        return value
    if is_off(value):
        return None
    if not isinstance(value, (str, int, float)):
        raise SettingsError(
            f"expected a number or a string such as '9G', not a {type(value).__name__}"
        )
    try:
        limit = parse(value)
    except OverflowError:
        limit = math.inf
    if not math.isfinite(limit) or limit < 0:
        raise SettingsError("a budget must be a finite number >= 0")
    return Budget(limit)


def format_tolerance(tolerance: Tolerance, *, drop: bool = False) -> str:
    """How a limit reads in a failure message: ``+10.0 %`` (``-10.0 %`` for a drop limit)."""
    if isinstance(tolerance, Relative):
        sign = "-" if drop else "+"
        return f"{sign}{tolerance.fraction * 100:.1f} %"
    return str(tolerance)

