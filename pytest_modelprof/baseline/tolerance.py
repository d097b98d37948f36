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

__all__ = [
    "Exact",
    "Relative",
    "Ignore",
    "Tolerance",
    "Budget",
    "parse_tolerance",
    "parse_budget",
    "format_tolerance",
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
            raise ValueError(f"a tolerance must be a finite fraction >= 0, got {self.fraction}")

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
            raise ValueError(f"a budget must be a finite number >= 0, got {self.limit}")


_OFF: Final = frozenset({"ignore", "none", "off", "false"})
_EXACT: Final = frozenset({"exact", "0", "0%", "0.0"})
_PERCENT: Final = re.compile(r"^\s*([0-9]*\.?[0-9]+)\s*%\s*$")


def parse_tolerance(value: object) -> Tolerance:
    """``0.1`` or ``"10%"`` -> ``Relative(0.1)``; ``0``/``"exact"`` -> ``Exact()``;
    ``None``/``"ignore"``/``"off"`` -> ``Ignore()``. Raises ``ValueError`` naming the value."""
    if value is None or value is False:
        return Ignore()
    if isinstance(value, (Exact, Relative, Ignore)):
        return value
    if isinstance(value, bool):  # True is no tolerance at all
        raise ValueError(f"expected a fraction such as 0.1 or '10%', got {value!r}")
    if isinstance(value, (int, float)):
        fraction = float(value)
    elif isinstance(value, str):
        text = value.strip().lower()
        if text in _OFF:
            return Ignore()
        if text in _EXACT:
            return Exact()
        match = _PERCENT.match(text)
        try:
            fraction = float(match.group(1)) / 100 if match else float(text)
        except ValueError:
            raise ValueError(
                f"expected a fraction such as 0.1, a percentage such as '10%', 'exact' or "
                f"'ignore', got {value!r}"
            ) from None
    else:
        raise ValueError(f"expected a fraction such as 0.1 or '10%', got {value!r}")
    if not math.isfinite(fraction) or fraction < 0:
        raise ValueError(f"a tolerance must be a finite fraction >= 0, got {value!r}")
    return Exact() if fraction == 0 else Relative(fraction)


def parse_budget(value: object, parse: Callable[[str | float | int], float]) -> Budget | None:
    """``"9G"`` -> ``Budget(9e9)``, ``parse`` reading the unit; ``None``/``"off"`` -> ``None``."""
    if value is None or value is False:
        return None
    if isinstance(value, Budget):
        return value
    if isinstance(value, str) and value.strip().lower() in _OFF:
        return None
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise ValueError(f"expected a number or a string such as '9G', got {value!r}")
    limit = parse(value)
    if not math.isfinite(limit) or limit < 0:
        raise ValueError(f"a budget must be a finite number >= 0, got {value!r}")
    return Budget(limit)


def format_tolerance(tolerance: Tolerance, *, drop: bool = False) -> str:
    """How a limit reads in a failure message: ``+10.0 %`` (``-10.0 %`` for a drop limit)."""
    if isinstance(tolerance, Relative):
        sign = "-" if drop else "+"
        return f"{sign}{tolerance.fraction * 100:.1f} %"
    return str(tolerance)

