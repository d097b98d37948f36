"""Turn a :class:`Capture` into per-layer rows, an op-family breakdown and totals (pure)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from pytest_modelprof.capture.record import Capture, OpRecord
from pytest_modelprof.machines import Machine
from pytest_modelprof.schema import (
    FLOAT_DIGITS,
    Bottleneck,
    LayerStats,
    OpCalls,
    OpFamilyStats,
    UncountedOp,
)

__all__ = [
    "ROOT",
    "Totals",
    "totals",
    "classify",
    "arithmetic_intensity",
    "layer_rows",
    "family_breakdown",
    "op_calls",
    "uncounted",
    "module_tree_totals",
]

# How the model's own scope (ops in the top-level forward) is named in layer rows.
ROOT = "(model)"


@dataclass(frozen=True, slots=True)
class Totals:
    flops: int
    macs: int
    bytes_read: int
    bytes_written: int
    backward_flops: int
    backward_macs: int

    @property
    def memory(self) -> int:
        return self.bytes_read + self.bytes_written


def totals(ops: Iterable[OpRecord]) -> Totals:
    f = m = r = w = bf = bm = 0
    for op in ops:
        f += op.flops
        m += op.macs
        r += op.bytes_read
        w += op.bytes_written
        if op.phase == "backward":
            bf += op.flops
            bm += op.macs
    return Totals(f, m, r, w, bf, bm)


def arithmetic_intensity(flops: int, memory: int) -> float:
    """FLOPs per byte moved; 0 when nothing moved. Rounded as files store it (exact round trip)."""
    return round(flops / memory, FLOAT_DIGITS) if memory else 0.0


def classify(flops: int, memory: int, machine: Machine) -> Bottleneck:
    """Compute-bound when the intensity reaches the machine's balance (roofline ridge point)."""
    if flops == 0 and memory == 0:
        return "none"
    return (
        "compute-bound"
        if arithmetic_intensity(flops, memory) >= machine.balance
        else "memory-bound"
    )


def layer_rows(capture: Capture, machine: Machine) -> list[LayerStats]:
    """One row per module scope that ran ops, in first-execution order; sums to the totals."""
    grouped: dict[str, list[OpRecord]] = {}
    for op in capture.ops:
        grouped.setdefault(op.module, []).append(op)
    rows: list[LayerStats] = []
    for path, ops in grouped.items():
        t = totals(ops)
        call = capture.modules.get(path)
        rows.append(
            LayerStats(
                name=path or ROOT,
                type=capture.module_types.get(path, "?"),
                calls=call.calls if call else 0,
                flops=t.flops,
                macs=t.macs,
                params=capture.module_params.get(path, 0),
                bytes_read=t.bytes_read,
                bytes_written=t.bytes_written,
                traffic=t.memory,
                arithmetic_intensity=arithmetic_intensity(t.flops, t.memory),
                bottleneck=classify(t.flops, t.memory, machine),
                output_shape=list(call.output_shape) if call and call.output_shape else None,
            )
        )
    return rows


def family_breakdown(ops: Iterable[OpRecord]) -> list[OpFamilyStats]:
    """Op families by FLOPs (then count); uncounted ops appear under ``"uncounted"``."""
    acc: dict[str, list[int]] = {}
    for op in ops:
        if op.is_view:
            continue  # views are free and would only swamp the counts
        row = acc.setdefault(op.family or "uncounted", [0, 0, 0, 0])
        row[0] += 1
        row[1] += op.flops
        row[2] += op.macs
        row[3] += op.memory
    total = sum(r[1] for r in acc.values()) or 1
    stats = [
        OpFamilyStats(
            family=k, count=c, flops=f, macs=m, traffic=b, share=round(f / total, FLOAT_DIGITS)
        )
        for k, (c, f, m, b) in acc.items()
    ]
    return sorted(stats, key=lambda s: (-s.flops, -s.count, s.family))


#: At most this many call sites are kept per op and layer.
MAX_SITES = 5


def op_calls(capture: Capture) -> list[OpCalls]:
    """Calls of each op per layer (views left out), with the model code lines that made them."""
    acc: dict[tuple[str, str], tuple[int, list[int]]] = {}
    for op in capture.ops:
        if op.is_view:
            continue
        key = (op.module or ROOT, op.op)
        count, sites = acc.get(key, (0, []))
        if op.site >= 0 and op.site not in sites and len(sites) < MAX_SITES:
            sites.append(op.site)
        acc[key] = (count + 1, sites)
    return [
        OpCalls(module=m, op=o, count=c, sites=[capture.sites[i] for i in s])
        for (m, o), (c, s) in sorted(acc.items())
    ]


def uncounted(ops: Iterable[OpRecord]) -> list[UncountedOp]:
    """Ops without a cost formula: calls, bytes moved and (the first ten) modules, by op."""
    seen: dict[str, tuple[int, int, list[str]]] = {}
    for op in ops:
        if op.family is not None:
            continue
        count, memory, modules = seen.get(op.op, (0, 0, []))
        where = op.module or ROOT
        if where not in modules:
            modules.append(where)
        seen[op.op] = (count + 1, memory + op.memory, modules)
    return [
        UncountedOp(op=k, count=c, traffic=b, modules=m[:10])
        for k, (c, b, m) in sorted(seen.items())
    ]


def module_tree_totals(capture: Capture) -> dict[str, Totals]:
    """Totals for every module including its descendants (counts go to every ancestor)."""
    acc: dict[str, list[OpRecord]] = {}
    for op in capture.ops:
        path = op.module
        while True:
            acc.setdefault(path, []).append(op)
            if not path:
                break
            path = path.rpartition(".")[0]
    return {k: totals(v) for k, v in acc.items()}
