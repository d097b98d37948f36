"""Fuse the captured op graph into the kernels a compiler would emit, and report on them.

:func:`partition` walks the capture's ops once, in execution order (which is a topological order
of the dataflow graph), and grows *subgraphs*: one anchor op plus the ops fused onto it. No
second run and no FX tracing: it works for every model the engine can capture.

Fusion rules
------------
An op joins the subgraph of one of its producers when all of these hold, and otherwise starts
a subgraph of its own:

1. the producer's subgraph **accepts** the op's family (table below);
2. the op is the producer's **only consumer**, or every other consumer is in that subgraph
   already or is sure to join it next (a pointwise op reading only that subgraph: the ``mul``
   of ``y * sigmoid(y)``); a tensor read by two kernels must be written to memory. The
   producer's tensor must not be a model output;
3. joining keeps the subgraphs **acyclic**: none of the op's other producer subgraphs depends,
   directly or not, on the one it joins.

==========================================  =============================================
subgraph (named by its first op)            accepts
==========================================  =============================================
conv                                        pointwise epilogue
matmul with a parameter (linear)            pointwise epilogue
matmul without parameters (``q @ k^T``)     pointwise epilogue; softmax -> attention
attention, open (matmul + softmax)          pointwise epilogue; a parameter-free matmul,
                                            which closes it (``softmax(q k^T) @ v``)
attention op (fused SDPA), closed attention pointwise epilogue
elementwise / activation / copy chain       pointwise; copy (a chain is one kernel)
norm (layer/group/RMS), softmax, pool,      pointwise epilogue
reduction, interpolate
anything else (embedding, rnn, sort, ...)   nothing
==========================================  =============================================

*Pointwise* means the families elementwise, activation and dropout, plus inference batch norm
(a per-channel scale and shift). Copies (``clone``, ``cat``) fuse into chains but not into a
conv or matmul epilogue, so a ``clone`` between a conv and its norm breaks the fusion.

View ops (and ``_unsafe_view``) move no data: they form no subgraph, join the subgraph of
their first consumer, and dataflow is followed through them. Creation ops (``empty``,
``zeros``, ``arange``) are constants: they join their first consumer as well, and no
dependency runs through them.

Bytes after fusion
------------------
A subgraph reads the tensors produced outside it (and the parameters, model inputs and
constants its ops read) and writes the tensors that are read outside it or are model outputs.
Tensors internal to a subgraph cost no traffic; views cost none. Starting from the capture's
per-op bytes, a read is internal when its producer (through views) is in the same subgraph,
and a write is internal when all its consumers are.

NB: internal edges are matched by shape and dtype, not by input slot (the capture's
``input_producers`` names each slot's producer; the partition does not read it yet): the bytes
of an internal edge are those of the producer's outputs whose shape and dtype appear among the
consumer's inputs, capped at what the consumer read. A parameter read by two ops of
one subgraph (tied weights) is still counted twice.

Parameters are conserved: each module's own parameters are credited to the first subgraph
(in dependency order) that reads any of them, so the subgraphs sum to the model's total less
``unread_params`` (modules whose parameters no op read, such as GoogLeNet's auxiliary heads
in eval mode).
"""

from __future__ import annotations

import gc
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

from pytest_modelprof.analysis.concurrency import (
    concurrency,
    critical_path,
    stages,
)
from pytest_modelprof.analysis.grouping import (
    Flow,
    attach_free,
    flow_of,
    group_ops,
    is_view_like,
    topological,
    view_roots,
)
from pytest_modelprof.analysis.partition_types import Parallelism, PartitionReport, Subgraph
from pytest_modelprof.analysis.rollup import arithmetic_intensity, classify
from pytest_modelprof.analysis.subgraph_order import Group
from pytest_modelprof.capture.record import Capture, OpRecord
from pytest_modelprof.costs.registry import TensorMeta
from pytest_modelprof.machines import Machine, resolve_machine
from pytest_modelprof.schema import PartitionSummary

__all__ = [
    "Parallelism",
    "Subgraph",
    "PartitionSummary",
    "PartitionReport",
    "partition",
    "view_roots",
    "is_view_like",
]

# The documents (Parallelism, Subgraph, PartitionReport) live in partition_types.


# -- bytes and shape facts ------------------------------------------------------------------------

def _edge_bytes(producer: OpRecord, consumer: OpRecord) -> int:
    wanted = {(m.shape, m.dtype) for m in consumer.inputs}
    return sum(m.nbytes for m in producer.outputs if (m.shape, m.dtype) in wanted)


def _largest(metas: Sequence[TensorMeta]) -> TensorMeta | None:
    return max(metas, key=lambda m: m.numel, default=None)


def _parallelism(ops: Sequence[OpRecord], written: list[int],
                 anchor: OpRecord) -> Parallelism:
    out = _largest([m for i in written for m in ops[i].outputs]) or _largest(anchor.outputs)
    shape = out.shape if out is not None else ()
    groups, depthwise = 1, False
    if anchor.family == "conv" and len(anchor.inputs) >= 2:
        x, w = anchor.inputs[0], anchor.inputs[1]
        if x.ndim >= 2 and w.ndim >= 2 and w.shape[1] > 0 and x.shape[1] % w.shape[1] == 0:
            groups = x.shape[1] // w.shape[1]
            depthwise = groups > 1 and w.shape[1] == 1
    spatial = 1
    for s in shape[2:]:
        spatial *= s
    return Parallelism(
        output_elements=out.numel if out is not None else 0,
        batch=shape[0] if len(shape) >= 1 else 1,
        channels=shape[1] if len(shape) >= 2 else 1,
        spatial=spatial,
        groups=groups,
        depthwise=depthwise,
    )


def _short(op: str) -> str:
    name = op.removeprefix("aten.").removeprefix("torchvision.")
    return name.removesuffix(".default")


# -- the partition --------------------------------------------------------------------------------

def partition(capture: Capture, machine: str | float | Machine | None = None) -> PartitionReport:
    """Fuse ``capture``'s ops into subgraphs; analyse their traffic, stages and critical path."""
    # Many small acyclic objects: the cyclic collector's full passes would only add time that
    # grows with the heap (superlinear in depth).
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        return _partition(capture, machine)
    finally:
        if gc_was_enabled:
            gc.enable()


def _partition(capture: Capture, machine: str | float | Machine | None) -> PartitionReport:
    mach = resolve_machine(machine)
    ops = capture.ops
    flow = flow_of(capture)
    groups, group_of = group_ops(ops, flow)
    attach_free(ops, flow, groups, group_of)
    order = topological(groups) if groups else []
    new_id = {g: k for k, g in enumerate(order)}
    readers = _readers(ops, flow, group_of)
    param_count, credited = _credit_params(capture, groups, order)

    deps = [sorted(new_id[d] for d in groups[g].deps) for g in order]
    levels = stages(deps)
    flops_by_id = [sum(ops[i].flops for i in groups[g].ops) for g in order]
    subgraphs: list[Subgraph] = []
    for k, g in enumerate(order):
        traffic = _traffic(ops, flow, groups[g], (g, group_of, readers))
        grp = groups[g]
        anchor = ops[next((i for i in grp.ops if not flow.free[i]), grp.ops[0])]
        flops = flops_by_id[k]
        subgraphs.append(
            Subgraph(
                id=k,
                name=f"{anchor.module or '(model)'}:{_short(anchor.op)}",
                module=anchor.module,
                kind=grp.kind,
                pattern="+".join(grp.families),
                ops=list(grp.ops),
                flops=flops,
                macs=traffic.macs,
                params=param_count[g],
                param_names=traffic.names,
                bytes_read=traffic.read,
                bytes_written=traffic.written,
                unfused_bytes=traffic.unfused,
                arithmetic_intensity=arithmetic_intensity(flops, traffic.read + traffic.written),
                bottleneck=classify(flops, traffic.read + traffic.written, mach),
                parallelism=_parallelism(ops, traffic.writers, anchor),
                depends_on=deps[k],
                stage=levels[k],
            )
        )
    unread = sum(n for m, n in capture.module_params.items() if m not in credited)
    return _report(capture, mach, subgraphs, unread, (levels, deps, flops_by_id))


def _readers(ops: Sequence[OpRecord], flow: Flow, group_of: list[int]) -> list[set[int]]:
    """The subgraphs of the non-free ops that read each root, for the write rule."""
    readers: list[set[int]] = [set() for _ in ops]
    for op in ops:
        if flow.free[op.index]:
            continue
        for p in op.producers:
            r = flow.root[p]
            if r >= 0:
                readers[r].add(group_of[op.index])
    return readers


def _credit_params(
    capture: Capture, groups: list[Group], order: list[int]
) -> tuple[list[int], set[str]]:
    """Each module's own parameter count goes to the first subgraph that reads one of them."""
    credited: set[str] = set()
    param_count = [0] * len(groups)
    for g in order:
        for i in groups[g].ops:
            for name in capture.ops[i].params:
                module = name.rpartition(".")[0]
                if module not in credited:
                    credited.add(module)
                    param_count[g] += capture.module_params.get(module, 0)
    return param_count, credited


@dataclass(slots=True)
class _Traffic:
    """A subgraph's bytes after fusion, its MACs, parameter names and writing ops."""

    read: int = 0
    written: int = 0
    unfused: int = 0
    macs: int = 0
    writers: list[int] = field(default_factory=list)
    names: list[str] = field(default_factory=list)


def _traffic(
    ops: Sequence[OpRecord],
    flow: Flow,
    grp: Group,
    where: tuple[int, list[int], list[set[int]]],
) -> _Traffic:
    """What subgraph ``g`` (``grp``) reads and writes once its internal tensors are fused."""
    g, group_of, readers = where
    out = _Traffic()
    for i in grp.ops:
        op = ops[i]
        out.unfused += op.memory
        out.macs += op.macs
        for name in op.params:
            if name not in out.names:
                out.names.append(name)
        if is_view_like(op):
            continue  # no kernel, no traffic
        internal = 0
        for p in op.producers:
            r = flow.root[p]
            if r >= 0 and group_of[r] == g:
                internal += _edge_bytes(ops[p], op)
        out.read += max(op.bytes_read - internal, 0)
        if op.bytes_written and (
            flow.free[i] or i in flow.output_roots or not readers[i] or readers[i] != {g}
        ):
            out.written += op.bytes_written
            out.writers.append(i)
    return out


def _report(
    capture: Capture,
    mach: Machine,
    subgraphs: list[Subgraph],
    unread_params: int,
    stages_deps_flops: tuple[list[int], list[list[int]], list[int]],
) -> PartitionReport:
    """The report over the subgraphs, with totals, counts, concurrency and critical path."""
    levels, deps, flops_by_id = stages_deps_flops
    ops = capture.ops
    total_flops = sum(op.flops for op in ops)
    fused = sum(s.memory for s in subgraphs)
    unfused_total = sum(op.memory for op in ops)
    kinds = Counter(s.kind for s in subgraphs)
    patterns = Counter(s.pattern for s in subgraphs)
    return PartitionReport(
        machine=mach,
        subgraphs=subgraphs,
        total_flops=total_flops,
        total_macs=sum(op.macs for op in ops),
        total_params=sum(s.params for s in subgraphs),
        unread_params=unread_params,
        fused_bytes=fused,
        unfused_bytes=unfused_total,
        fused_arithmetic_intensity=arithmetic_intensity(total_flops, fused),
        unfused_arithmetic_intensity=arithmetic_intensity(total_flops, unfused_total),
        kind_counts=dict(sorted(kinds.items(), key=lambda kv: (-kv[1], kv[0]))),
        pattern_counts=dict(sorted(patterns.items(), key=lambda kv: (-kv[1], kv[0]))),
        depthwise_convs=sum(1 for s in subgraphs if s.parallelism.depthwise),
        concurrency=concurrency(levels),
        critical_path=critical_path(deps, flops_by_id),
    )
