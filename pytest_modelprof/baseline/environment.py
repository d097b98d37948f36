"""The facts a baseline records about where it was made, and how a change of each reads.

One table, :data:`ENVIRONMENT_FACTS`, one entry per ``BaselineEnvironment`` field (a test keeps
them in step) in the order changes are listed: the gate's comparison reads it for the changes
that let kernel-dependent counts off, the cost history for its notes. Which counts a change
lets off is each metric's own declaration (``Metric.kernel_dependent``,
``Metric.cpu_dependent``). Standard library only.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Final, Literal

__all__ = ["FactScope", "EnvironmentFact", "ENVIRONMENT_FACTS", "fact_change", "cpu_only"]

#: What a change of the fact means for the counts: ``kernels`` (other kernels may count other
#: bytes), ``cpu`` (other instructions: only counts the CPU decides), ``model`` (it follows from
#: the model or the test, so it is their change: the capture mode, the device, the dtype the test
#: chose; the gate judges it by the limits like any cost change and names it).
FactScope = Literal["kernels", "cpu", "model"]


@dataclass(frozen=True)
class EnvironmentFact:
    """One field of ``BaselineEnvironment``: its label in a change (``torch 2.14.1 -> 2.15.0``)
    and what a change of it means."""

    field: str
    label: str
    scope: FactScope
    flags: bool = False  # a space-separated set: a change names what was gained and lost


ENVIRONMENT_FACTS: Final[tuple[EnvironmentFact, ...]] = (
    EnvironmentFact("torch_version", "torch", "kernels"),
    EnvironmentFact("torchvision_version", "torchvision", "kernels"),
    EnvironmentFact("source_version", "model source", "kernels"),
    EnvironmentFact("capture_mode", "capture mode", "model"),
    EnvironmentFact("device", "device", "model"),
    EnvironmentFact("dtype", "dtype", "model"),
    EnvironmentFact("cpu", "cpu", "cpu"),
    EnvironmentFact("cpu_flags", "cpu flags", "cpu", flags=True),
)

#: Flags named in one change before the rest is counted.
_SHOWN_FLAGS: Final = 6


def fact_change(
    fact: EnvironmentFact, old: str | None, new: str | None, *, unknown: str | None = None
) -> str | None:
    """``"torch 2.14.1 -> 2.15.0"``, ``"cpu flags +avx512f -amx_tile"``, or ``None`` when equal.

    A side that did not record the fact makes no change unless ``unknown`` names it (the
    history's notes: ``"torchvision unknown -> 0.25.0"``); flags are compared only when both
    sides recorded them."""
    if old == new:
        return None
    if unknown is not None and not fact.flags:
        old, new = old or unknown, new or unknown
    if old is None or new is None:
        return None
    if fact.flags:
        before, after = set(old.split()), set(new.split())
        parts = [f"+{f}" for f in sorted(after - before)]
        parts += [f"-{f}" for f in sorted(before - after)]
        more = len(parts) - _SHOWN_FLAGS
        shown = " ".join(parts[:_SHOWN_FLAGS]) + (f" (+{more} more)" if more > 0 else "")
        return f"{fact.label} {shown}"
    return f"{fact.label} {old} \u2192 {new}"


def cpu_only(changes: Iterable[str]) -> bool:
    """Whether every change (as :func:`fact_change` words it) is of a ``cpu`` fact."""
    labels = [f.label for f in ENVIRONMENT_FACTS if f.scope == "cpu"]
    found = list(changes)
    return bool(found) and all(c.startswith(tuple(f"{label} " for label in labels)) for c in found)
