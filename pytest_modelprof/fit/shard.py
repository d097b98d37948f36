"""Data-parallel sharding over N devices, derived from one single-device step (no rerun).

Per device, with ``/N`` rounded up:

* ``zero1``: optimizer state, and the optimizer update's temporaries, ``/N``;
* ``zero2``: and gradients ``/N``;
* ``zero3`` and ``fsdp`` (full shard): and parameters ``/N``, and their cast copies (the
  weights autocast keeps in low precision, which a sharded step holds a unit at a time);
  during forward and backward
  each device also holds the largest unit's parameters gathered twice (the unit running and
  the next one prefetched) and that unit's full gradients (before the reduce-scatter).

Activations, inputs, buffers and other temporaries are per device (``batch`` is per device).
The peak is found again over the whole step with those components scaled, so it may move
(a step whose peak was the optimizer's update can peak in the backward pass once sharded).
"""

from __future__ import annotations

from dataclasses import dataclass

from pytest_modelprof.fit.step import COMPONENTS, StepLog
from pytest_modelprof.fit.tracker import Allocation

__all__ = ["sharded_peak", "scaled_components"]


_APART = ("optimizer_transient", "param_copy_transient", "param_copy_activations")
_FULL = (
    "optimizer_state",
    "optimizer_transient",
    "gradients",
    "parameters",
    "param_copy_transient",
    "param_copy_activations",
)


def scaled_components(shard: str) -> frozenset[str]:
    """The components divided by the device count under ``shard``."""
    return frozenset(
        {
            "none": (),
            "zero1": ("optimizer_state", "optimizer_transient"),
            "zero2": ("optimizer_state", "optimizer_transient", "gradients"),
            "zero3": _FULL,
            "fsdp": _FULL,
        }[shard]
    )


def _div(nbytes: int, n: int) -> int:
    return -(-nbytes // n)


@dataclass(frozen=True)
class ShardedPeak:
    """The per-device peak, the doubled op count where it is, its breakdown, the gathered bytes."""

    peak_bytes: int
    clock: int
    breakdown: dict[str, int]
    gathered_bytes: int


def _component(log: StepLog, a: Allocation) -> str:
    """The component an allocation counts in when sharded.

    An update temporary is "transient", and a parameter's cast copy (autocast's weight cache)
    "transient" or "activations"; sharding divides them apart from the rest.
    """
    cat = log.categories[id(a)]
    if a.param_copy and cat in ("transient", "activations"):
        return f"param_copy_{cat}"
    return "optimizer_transient" if cat == "transient" and a.phase == "optimizer" else cat


def _events(log: StepLog) -> list[tuple[int, int, str, int]]:
    """``(clock, order, component, +/- bytes)`` of every allocation and free, in time order."""
    events: list[tuple[int, int, str, int]] = []
    for a in log.tracker.log:
        comp = _component(log, a)
        events.append((a.born, 1, comp, a.nbytes))
        if a.freed < (1 << 62):
            events.append((a.freed, 0, comp, -a.nbytes))
    events.sort(key=lambda e: (e[0], e[1]))
    return events


def sharded_peak(log: StepLog, shard: str, devices: int) -> ShardedPeak:
    """The peak of one device when ``shard`` splits the step over ``devices``."""
    n = devices if shard != "none" else 1
    scaled = scaled_components(shard)
    tracker = log.tracker
    gathered = 0
    if shard in ("zero3", "fsdp") and n > 1:
        unit_params, unit_grads = log.unit_bytes
        gathered = 2 * unit_params + unit_grads

    def key(a: Allocation) -> str:
        return _component(log, a)

    events = _events(log)
    running = dict.fromkeys((*COMPONENTS, *_APART), 0)
    static = dict(log.static)
    backward_end = tracker.phase_end.get("backward", tracker.phase_end.get("forward", 0))

    def total(clock: int) -> int:
        parts = {**running, **{k: running[k] + v for k, v in static.items()}}
        value = sum(_div(v, n) if k in scaled else v for k, v in parts.items())
        return value + (gathered if clock <= backward_end else 0)

    # Before the first op only the static parts exist, divided like the rest.
    best_clock = 0
    best = sum(_div(v, n) if k in scaled else v for k, v in static.items())
    i = 0
    while i < len(events):
        clock = events[i][0]
        born = False
        while i < len(events) and events[i][0] == clock:
            _, order, comp, delta = events[i]
            running[comp] += delta
            born = born or order == 1
            i += 1
        if born and clock % 2 == 0:
            value = total(clock)
            if value > best:
                best, best_clock = value, clock
    parts = log.breakdown_at(best_clock)
    apart = dict.fromkeys(_APART, 0)
    for a in tracker.live_at(best_clock):
        comp = key(a)
        if comp in apart:
            apart[comp] += a.nbytes
    breakdown = {k: _div(v, n) if k in scaled else v for k, v in parts.items()}
    for comp, nbytes in apart.items():  # counted whole in parts; divide their share only
        if comp in scaled:
            home = "transient" if comp.endswith("transient") else "activations"
            breakdown[home] += _div(nbytes, n) - nbytes
    breakdown["gathered"] = gathered if best_clock <= backward_end else 0
    return ShardedPeak(best, best_clock, breakdown, gathered)
