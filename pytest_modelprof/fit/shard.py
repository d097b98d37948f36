"""Data-parallel sharding over N devices, derived from one single-device step (no rerun).

Per device, with ``/N`` rounded up:

* ``zero1``: optimizer state, and the optimizer update's temporaries, ``/N``;
* ``zero2``: and gradients ``/N``;
* ``zero3`` and ``fsdp`` (full shard): and parameters ``/N``; during forward and backward
  each device also holds the largest unit's parameters gathered twice (the unit running and
  the next one prefetched) and that unit's full gradients (before the reduce-scatter).

Activations, inputs, buffers and other temporaries are per device (``batch`` is per device).
The peak is found again over the whole step with those components scaled, so it may move
(a step whose peak was the optimizer's update can peak in the backward pass once sharded).
"""

from __future__ import annotations

from dataclasses import dataclass

from pytest_modelprof.fit.step import COMPONENTS, StepLog

__all__ = ["ShardedPeak", "sharded_peak", "scaled_components"]


def scaled_components(shard: str) -> frozenset[str]:
    """The components divided by the device count under ``shard``."""
    return frozenset(
        {
            "none": (),
            "zero1": ("optimizer_state", "optimizer_transient"),
            "zero2": ("optimizer_state", "optimizer_transient", "gradients"),
            "zero3": ("optimizer_state", "optimizer_transient", "gradients", "parameters"),
            "fsdp": ("optimizer_state", "optimizer_transient", "gradients", "parameters"),
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


def sharded_peak(log: StepLog, shard: str, devices: int) -> ShardedPeak:
    """The peak of one device when ``shard`` splits the step over ``devices``."""
    n = devices if shard != "none" else 1
    scaled = scaled_components(shard)
    tracker = log.tracker
    gathered = 0
    if shard in ("zero3", "fsdp") and n > 1:
        unit_params, unit_grads = log.unit_bytes
        gathered = 2 * unit_params + unit_grads

    # The component of an update temporary is "transient"; sharding treats it apart.
    def key(a_id: int, phase: str) -> str:
        cat = log.categories[a_id]
        return "optimizer_transient" if cat == "transient" and phase == "optimizer" else cat

    events: list[tuple[int, int, str, int]] = []  # clock, order, component, +/- bytes
    for a in tracker.log:
        comp = key(id(a), a.phase)
        events.append((a.born, 1, comp, a.nbytes))
        if a.freed < (1 << 62):
            events.append((a.freed, 0, comp, -a.nbytes))
    events.sort(key=lambda e: (e[0], e[1]))
    running = dict.fromkeys((*COMPONENTS, "optimizer_transient"), 0)
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
    # Update temporaries are transient; under sharding they are divided like the state.
    opt_tmp = sum(
        a.nbytes
        for a in tracker.live_at(best_clock)
        if a.phase == "optimizer" and log.categories[id(a)] == "transient"
    )
    breakdown = {}
    for k in COMPONENTS:
        v = parts[k]
        if k == "transient" and "optimizer_transient" in scaled:
            v = (v - opt_tmp) + _div(opt_tmp, n)
        elif k in scaled:
            v = _div(v, n)
        breakdown[k] = v
    breakdown["gathered"] = gathered if best_clock <= backward_end else 0
    return ShardedPeak(best, best_clock, breakdown, gathered)
