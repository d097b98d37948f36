"""The facts a baseline records about where it was made, and how a change of each reads.

One table, :data:`ENVIRONMENT_FACTS`, one entry per ``BaselineEnvironment`` field (a test keeps
them in step) in the order changes are listed: the gate's comparison reads it for the changes
that let kernel-dependent counts off, the cost history for its notes. Which counts a change
lets off is each metric's own declaration (``Metric.kernel_dependent``,
``Metric.cpu_dependent``). Standard library only (the baseline document is a type only).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final, Literal

if TYPE_CHECKING:
    from pytest_modelprof.baseline.document import BaselineDocument, BaselineEnvironment

__all__ = [
    "cpu_only",
    "fact_changes",
    "environment_changes",
]

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


def fact_changes(
    before: BaselineEnvironment,
    after: BaselineEnvironment,
    *,
    scopes: Iterable[FactScope] = ("kernels", "cpu", "model"),
    unknown: str | None = None,
) -> list[str]:
    """Each fact of ``scopes`` that changed, in table order, as :func:`fact_change` words it
    (the cost history's notes: every fact, a side that lacks one named ``unknown``)."""
    wanted = set(scopes)
    changes = (
        fact_change(f, getattr(before, f.field), getattr(after, f.field), unknown=unknown)
        for f in ENVIRONMENT_FACTS
        if f.scope in wanted
    )
    return [c for c in changes if c is not None]


def environment_changes(
    current: BaselineDocument, baseline: BaselineDocument | None, *, cpu: bool = True
) -> tuple[str, ...]:
    """``("torch 2.15.0 -> 2.14.1", ...)``: what the counts depend on and changed since the
    baseline was recorded (the ``kernels`` facts of :data:`~pytest_modelprof.baseline.
    environment.ENVIRONMENT_FACTS`; with ``cpu``, the CPU's too).

    Capture mode is left out: it follows from the model (a data-dependent branch turns meta
    into real, and with it device meta into cpu), so that change is the model's, judged by the
    capture row, never a reason to let a count off as a kernel difference. A device change is
    the environment's only where the capture mode held and both ran on a real device of
    another type (cpu -> cuda: other kernels; not cuda:0 -> cuda:1). The dtype is the test's
    choice, never the environment's.
    """
    if baseline is None:
        return ()
    before, after = baseline.environment, current.environment
    out = fact_changes(before, after, scopes=("kernels", "cpu") if cpu else ("kernels",))
    if (
        before.capture_mode == after.capture_mode
        and before.device not in (None, "meta")
        and after.device not in (None, "meta")
        # The device type: cuda:0 and cuda:1 run the same kernels.
        and before.device.partition(":")[0] != after.device.partition(":")[0]
    ):
        out.append(f"device {before.device} \u2192 {after.device}")
    return tuple(out)
