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

NB: the capture links each op to its producers but not each input slot to its producer; the
bytes of an internal edge are those of the producer's outputs whose shape and dtype appear
among the consumer's inputs, capped at what the consumer read. A parameter read by two ops of
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
from heapq import heappop, heappush

from pytest_modelprof.analysis.concurrency import (
    concurrency,
    critical_path,
    stages,
)
from pytest_modelprof.analysis.partition_types import Parallelism, PartitionReport, Subgraph
from pytest_modelprof.analysis.rollup import arithmetic_intensity, classify
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

_POINTWISE = frozenset({"elementwise", "activation", "dropout"})
_REDUCTIONS = frozenset({"norm", "softmax", "pool", "reduction", "interpolate"})


# The documents (Parallelism, Subgraph, PartitionReport) live in partition_types.


# -- dataflow through views -----------------------------------------------------------------------

def is_view_like(op: OpRecord) -> bool:
    """Aliases or reshapes without a kernel: schema views and ``_unsafe_view``."""
    return op.is_view or op.family == "view"


def view_roots(ops: Sequence[OpRecord]) -> list[int]:
    """For each op, the op whose data it carries: itself, or for a view its non-view source.

    ``-1`` marks a view of something no op produced (a parameter, a model input, a constant).
    """
    root: list[int] = []
    for op in ops:
        if is_view_like(op):
            r = -1
            for p in op.producers:
                if root[p] >= 0:
                    r = root[p]
                    break
            root.append(r)
        else:
            root.append(op.index)
    return root


# -- grouping -------------------------------------------------------------------------------------

@dataclass(slots=True)
class _Group:
    kind: str
    # What it still accepts: "alone" nothing; "anchor"/"linear"/"closed" pointwise epilogues;
    # "chain" pointwise and copies; "open-qk" (q @ k^T) also softmax; "open-attn" also @ v.
    state: str
    ops: list[int]
    families: list[str]
    deps: set[int] = field(default_factory=set)
    last: int = -1  # the latest op index grouped so far (before free ops are attached)


def _is_pointwise(op: OpRecord) -> bool:
    if op.family in _POINTWISE:
        return True
    return op.family == "norm" and "batch_norm" in op.op


def _kind(op: OpRecord, weighted: bool) -> tuple[str, str]:
    """The kind and acceptance state of a subgraph that ``op`` starts."""
    fam = op.family or "uncounted"
    if fam == "matmul":
        return "matmul", ("linear" if weighted else "open-qk")
    if fam in ("conv", "attention"):
        return fam, "anchor"
    if _is_pointwise(op) or fam == "copy":
        return ("elementwise" if fam == "norm" else fam), "chain"
    if fam in _REDUCTIONS:
        return fam, "anchor"
    return fam, "alone"


def _accepts(group: _Group, op: OpRecord, weighted: bool) -> str | None:
    """The group's new state if it takes ``op``, else ``None``."""
    state = group.state
    if state == "alone":
        return None
    if _is_pointwise(op):
        return state
    if state == "chain" and op.family == "copy":
        return state
    if state == "open-qk" and op.family == "softmax":
        return "open-attn"
    if state == "open-attn" and op.family == "matmul" and not weighted:
        return "attention-closed"
    return None


def _depends_on(groups: list[_Group], start: int, target: int) -> bool:
    """Whether group ``start`` depends, directly or through others, on group ``target``.

    Only groups that ran an op after ``target``'s first op can depend on it (to read what
    ``target`` wrote they must run later), so the search never leaves the window since then:
    local in a deep model, which keeps the partition linear in depth instead of re-searching
    every earlier group for every candidate.
    """
    horizon = groups[target].ops[0]
    seen = {start}
    stack = [start]
    while stack:
        g = stack.pop()
        for d in groups[g].deps:
            if d == target:
                return True
            if d not in seen and groups[d].last > horizon:
                seen.add(d)
                stack.append(d)
    return False


def _others_follow(ops: Sequence[OpRecord], readers: list[int], sources: list[list[int]],
                   group_of: list[int], i: int, r: int, g: int) -> bool:
    """Whether every other reader of ``r`` is in group ``g`` or is sure to join it next.

    A later reader is sure to join when it is pointwise and reads nothing but ``r``, op ``i``
    and ops already in ``g`` (``y * sigmoid(y)`` fuses onto the conv that made ``y``).
    """
    for c in readers:
        if c == i or group_of[c] == g:
            continue
        if group_of[c] >= 0 or not _is_pointwise(ops[c]):
            return False
        if any(s != r and s != i and group_of[s] != g for s in sources[c]):
            return False
    return True


def _group_ops(ops: Sequence[OpRecord], root: list[int], free: list[bool],
               output_roots: set[int]) -> tuple[list[_Group], list[int]]:
    n = len(ops)
    # Reads a parameter, directly or through views (a Linear's mm reads t(weight)).
    weighted: list[bool] = []
    for op in ops:
        weighted.append(bool(op.params) or any(
            is_view_like(ops[p]) and weighted[p] for p in op.producers))
    consumers: list[list[int]] = [[] for _ in range(n)]  # non-free readers of each root
    sources: list[list[int]] = [[] for _ in range(n)]
    for op in ops:
        if free[op.index]:
            continue
        seen: list[int] = []
        for p in op.producers:
            r = root[p]
            if r >= 0 and not free[r] and r not in seen:
                seen.append(r)
        sources[op.index] = seen
        for r in seen:
            consumers[r].append(op.index)

    groups: list[_Group] = []
    group_of = [-1] * n
    for op in ops:
        i = op.index
        if free[i]:
            continue
        src_groups = {group_of[r] for r in sources[i]}
        joined = -1
        new_state = ""
        for r in sources[i]:
            g = group_of[r]
            state = _accepts(groups[g], op, weighted[i])
            if state is None or r in output_roots:
                continue
            if not _others_follow(ops, consumers[r], sources, group_of, i, r, g):
                continue
            if any(h != g and _depends_on(groups, h, g) for h in src_groups):
                continue
            joined, new_state = g, state
            break
        if joined < 0:
            kind, state = _kind(op, weighted[i])
            groups.append(_Group(kind, state, [i], [op.family or "uncounted"]))
            joined = len(groups) - 1
        else:
            grp = groups[joined]
            grp.ops.append(i)
            fam = op.family or "uncounted"
            if fam != grp.families[-1]:
                grp.families.append(fam)
            if new_state == "attention-closed":
                grp.kind, grp.state = "attention", "closed"
            elif new_state == "open-attn":
                grp.kind, grp.state = "attention", "open-attn"
            else:
                grp.state = new_state
        group_of[i] = joined
        groups[joined].last = i
        groups[joined].deps.update(h for h in src_groups if h != joined)
    return groups, group_of


def _attach_free(ops: Sequence[OpRecord], root: list[int], free: list[bool],
                 groups: list[_Group], group_of: list[int]) -> None:
    """Views and constants go to their first consumer, else to their source, else nearby."""
    n = len(ops)
    users: list[list[int]] = [[] for _ in range(n)]
    for op in ops:
        for p in op.producers:
            users[p].append(op.index)
    if not groups:  # nothing but views: one subgraph holds them
        groups.append(_Group("view", "alone", [], ["view"]))
    next_bound = [-1] * (n + 1)
    for i in range(n - 1, -1, -1):
        next_bound[i] = i if not free[i] else next_bound[i + 1]
    last_bound = -1
    prev_bound = [-1] * n
    for i in range(n):
        if not free[i]:
            last_bound = i
        prev_bound[i] = last_bound
    for i in range(n - 1, -1, -1):
        if not free[i]:
            continue
        g = next((group_of[u] for u in users[i] if group_of[u] >= 0), -1)
        if g < 0 and root[i] >= 0 and group_of[root[i]] >= 0:
            g = group_of[root[i]]
        if g < 0:
            near = next_bound[i] if next_bound[i] >= 0 else prev_bound[i]
            g = group_of[near] if near >= 0 else 0
        group_of[i] = g
        groups[g].ops.append(i)
    for grp in groups:
        grp.ops.sort()


def _topological(groups: list[_Group]) -> list[int]:
    """Group order with every dependency first; ties by first op (Kahn's algorithm)."""
    dependants: list[list[int]] = [[] for _ in groups]
    waiting = [len(g.deps) for g in groups]
    for g, grp in enumerate(groups):
        for d in grp.deps:
            dependants[d].append(g)
    heap = [(groups[g].ops[0], g) for g in range(len(groups)) if waiting[g] == 0]
    order: list[int] = []
    while heap:
        _, g = heappop(heap)
        order.append(g)
        for h in dependants[g]:
            waiting[h] -= 1
            if waiting[h] == 0:
                heappush(heap, (groups[h].ops[0], h))
    if len(order) != len(groups):  # the join rule forbids cycles; fail loudly if one slipped by
        raise RuntimeError("subgraph dependencies form a cycle; please report this model")
    return order


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
    n = len(ops)
    root = view_roots(ops)
    # Free ops: views, and constants (which carry no dependency).
    free = [is_view_like(op) or op.family == "creation" for op in ops]
    for op in ops:
        if op.family == "creation":
            root[op.index] = -1
    for op in ops:  # a view of a constant is a constant
        if is_view_like(op) and root[op.index] >= 0 and free[root[op.index]]:
            root[op.index] = -1
    output_roots = {root[i] for i in capture.output_ops if 0 <= i < n and root[i] >= 0}

    groups, group_of = _group_ops(ops, root, free, output_roots)
    _attach_free(ops, root, free, groups, group_of)
    order = _topological(groups) if groups else []
    new_id = {g: k for k, g in enumerate(order)}

    # Consumers by root (non-free readers), for the write rule.
    readers: list[set[int]] = [set() for _ in range(n)]
    for op in ops:
        if free[op.index]:
            continue
        for p in op.producers:
            r = root[p]
            if r >= 0:
                readers[r].add(group_of[op.index])

    # Parameters: each module's own count goes to the first subgraph that reads one of them.
    credited: set[str] = set()
    param_count = [0] * len(groups)
    for g in order:
        for i in groups[g].ops:
            for name in ops[i].params:
                module = name.rpartition(".")[0]
                if module not in credited:
                    credited.add(module)
                    param_count[g] += capture.module_params.get(module, 0)

    deps = [sorted(new_id[d] for d in groups[g].deps) for g in order]
    levels = stages(deps)
    flops_by_id = [sum(ops[i].flops for i in groups[g].ops) for g in order]
    conc = concurrency(levels)
    path = critical_path(deps, flops_by_id)

    subgraphs: list[Subgraph] = []
    for k, g in enumerate(order):
        grp = groups[g]
        read = written = unfused = macs = 0
        writers: list[int] = []
        names: list[str] = []
        for i in grp.ops:
            op = ops[i]
            unfused += op.memory
            macs += op.macs
            for name in op.params:
                if name not in names:
                    names.append(name)
            if is_view_like(op):
                continue  # no kernel, no traffic
            internal = 0
            for p in op.producers:
                r = root[p]
                if r >= 0 and group_of[r] == g:
                    internal += _edge_bytes(ops[p], op)
            read += max(op.bytes_read - internal, 0)
            if op.bytes_written and (
                free[i] or i in output_roots or not readers[i] or readers[i] != {g}
            ):
                written += op.bytes_written
                writers.append(i)
        anchor = ops[next((i for i in grp.ops if not free[i]), grp.ops[0])]
        flops = flops_by_id[k]
        pattern = "+".join(grp.families)
        subgraphs.append(
            Subgraph(
                id=k,
                name=f"{anchor.module or '(model)'}:{_short(anchor.op)}",
                module=anchor.module,
                kind=grp.kind,
                pattern=pattern,
                ops=list(grp.ops),
                flops=flops,
                macs=macs,
                params=param_count[g],
                param_names=names,
                bytes_read=read,
                bytes_written=written,
                unfused_bytes=unfused,
                arithmetic_intensity=arithmetic_intensity(flops, read + written),
                bottleneck=classify(flops, read + written, mach),
                parallelism=_parallelism(ops, writers, anchor),
                depends_on=deps[k],
                stage=levels[k],
            )
        )

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
        unread_params=sum(n for m, n in capture.module_params.items() if m not in credited),
        fused_bytes=fused,
        unfused_bytes=unfused_total,
        fused_arithmetic_intensity=arithmetic_intensity(total_flops, fused),
        unfused_arithmetic_intensity=arithmetic_intensity(total_flops, unfused_total),
        kind_counts=dict(sorted(kinds.items(), key=lambda kv: (-kv[1], kv[0]))),
        pattern_counts=dict(sorted(patterns.items(), key=lambda kv: (-kv[1], kv[0]))),
        depthwise_convs=sum(1 for s in subgraphs if s.parallelism.depthwise),
        concurrency=conc,
        critical_path=path,
    )
