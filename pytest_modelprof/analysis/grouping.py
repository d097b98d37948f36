"""The partitioner's first steps: follow dataflow through views, grow subgraphs, order them.

The fusion rules themselves are described in :mod:`pytest_modelprof.analysis.partition`;
this module applies them, one op at a time in execution order.
"""

from __future__ import annotations

from collections.abc import Sequence
from heapq import heappop, heappush

from pytest_modelprof.analysis.subgraph_order import Group, add_deps, depends_on
from pytest_modelprof.capture.record import Capture, OpRecord

__all__ = ["Flow", "is_view_like", "view_roots", "flow_of", "group_ops", "attach_free",
           "topological"]

_POINTWISE = frozenset({"elementwise", "activation", "dropout"})
_REDUCTIONS = frozenset({"norm", "softmax", "pool", "reduction", "interpolate"})


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


class Flow:
    """Dataflow facts the partition reads: each op's root, which ops are free, output roots."""

    __slots__ = ("root", "free", "output_roots")

    def __init__(self, root: list[int], free: list[bool], output_roots: set[int]) -> None:
        self.root = root
        self.free = free  # views and constants: no kernel of their own
        self.output_roots = output_roots


def flow_of(capture: Capture) -> Flow:
    """Roots through views, with constants (and views of them) carrying no dependency."""
    ops = capture.ops
    root = view_roots(ops)
    # Free ops: views, and constants (which carry no dependency).
    free = [is_view_like(op) or op.family == "creation" for op in ops]
    for op in ops:
        if op.family == "creation":
            root[op.index] = -1
    for op in ops:  # a view of a constant is a constant
        if is_view_like(op) and root[op.index] >= 0 and free[root[op.index]]:
            root[op.index] = -1
    n = len(ops)
    output_roots = {root[i] for i in capture.output_ops if 0 <= i < n and root[i] >= 0}
    return Flow(root, free, output_roots)


# -- grouping -------------------------------------------------------------------------------------

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


def _accepts(group: Group, op: OpRecord, weighted: bool) -> str | None:
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


def _weighted(ops: Sequence[OpRecord]) -> list[bool]:
    """Whether each op reads a parameter, directly or through views (``mm`` of ``t(weight)``)."""
    weighted: list[bool] = []
    for op in ops:
        weighted.append(bool(op.params) or any(
            is_view_like(ops[p]) and weighted[p] for p in op.producers))
    return weighted


def _sources(ops: Sequence[OpRecord], flow: Flow) -> tuple[list[list[int]], list[list[int]]]:
    """Each non-free op's distinct non-free source roots, and each root's non-free readers."""
    n = len(ops)
    consumers: list[list[int]] = [[] for _ in range(n)]
    sources: list[list[int]] = [[] for _ in range(n)]
    for op in ops:
        if flow.free[op.index]:
            continue
        seen: list[int] = []
        for p in op.producers:
            r = flow.root[p]
            if r >= 0 and not flow.free[r] and r not in seen:
                seen.append(r)
        sources[op.index] = seen
        for r in seen:
            consumers[r].append(op.index)
    return consumers, sources


class _Grouper:
    """Grows the subgraphs, one op at a time in execution order."""

    def __init__(self, ops: Sequence[OpRecord], flow: Flow) -> None:
        self.ops = ops
        self.flow = flow
        self.weighted = _weighted(ops)
        self.consumers, self.sources = _sources(ops, flow)
        self.groups: list[Group] = []
        self.group_of = [-1] * len(ops)

    def run(self) -> None:
        for op in self.ops:
            i = op.index
            if self.flow.free[i]:
                continue
            src_groups = {self.group_of[r] for r in self.sources[i]}
            joined, new_state = self._target(op, src_groups)
            if joined < 0:
                kind, state = _kind(op, self.weighted[i])
                family = op.family or "uncounted"
                self.groups.append(Group(kind, state, [i], [family], order=len(self.groups)))
                joined = len(self.groups) - 1
            else:
                _join(self.groups[joined], op, new_state)
            self.group_of[i] = joined
            add_deps(self.groups, joined, {h for h in src_groups if h != joined})

    def _target(self, op: OpRecord, src_groups: set[int]) -> tuple[int, str]:
        """The group ``op`` joins and its new state; ``(-1, "")``: it starts its own."""
        i = op.index
        for r in self.sources[i]:
            g = self.group_of[r]
            state = _accepts(self.groups[g], op, self.weighted[i])
            if state is None or r in self.flow.output_roots:
                continue
            if not self._others_follow(self.consumers[r], i, r, g):
                continue
            if any(h != g and depends_on(self.groups, h, g) for h in src_groups):
                continue
            return g, state
        return -1, ""

    def _others_follow(self, readers: list[int], i: int, r: int, g: int) -> bool:
        """Whether every other reader of ``r`` is in group ``g`` or is sure to join it next.

        A later reader is sure to join when it is pointwise and reads nothing but ``r``, op
        ``i`` and ops already in ``g`` (``y * sigmoid(y)`` fuses onto the conv that made ``y``).
        """
        group_of = self.group_of
        for c in readers:
            if c == i or group_of[c] == g:
                continue
            if group_of[c] >= 0 or not _is_pointwise(self.ops[c]):
                return False
            if any(s != r and s != i and group_of[s] != g for s in self.sources[c]):
                return False
        return True


def _join(grp: Group, op: OpRecord, new_state: str) -> None:
    """``op`` joins ``grp``, which moves to ``new_state``."""
    grp.ops.append(op.index)
    fam = op.family or "uncounted"
    if fam != grp.families[-1]:
        grp.families.append(fam)
    if new_state == "attention-closed":
        grp.kind, grp.state = "attention", "closed"
    elif new_state == "open-attn":
        grp.kind, grp.state = "attention", "open-attn"
    else:
        grp.state = new_state


def group_ops(ops: Sequence[OpRecord], flow: Flow) -> tuple[list[Group], list[int]]:
    """The subgraphs of the ops that are not free, and each op's subgraph (-1: free)."""
    grouper = _Grouper(ops, flow)
    grouper.run()
    return grouper.groups, grouper.group_of


def _bounds(free: list[bool]) -> tuple[list[int], list[int]]:
    """For each op, the next and the previous op that is not free (``-1``: none)."""
    n = len(free)
    next_bound = [-1] * (n + 1)
    for i in range(n - 1, -1, -1):
        next_bound[i] = i if not free[i] else next_bound[i + 1]
    last_bound = -1
    prev_bound = [-1] * n
    for i in range(n):
        if not free[i]:
            last_bound = i
        prev_bound[i] = last_bound
    return next_bound, prev_bound


def attach_free(ops: Sequence[OpRecord], flow: Flow, groups: list[Group],
                group_of: list[int]) -> None:
    """Views and constants go to their first consumer, else to their source, else nearby."""
    root, free = flow.root, flow.free
    users: list[list[int]] = [[] for _ in range(len(ops))]
    for op in ops:
        for p in op.producers:
            users[p].append(op.index)
    if not groups:  # nothing but views: one subgraph holds them
        groups.append(Group("view", "alone", [], ["view"]))
    next_bound, prev_bound = _bounds(free)
    for i in range(len(ops) - 1, -1, -1):
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


def topological(groups: list[Group]) -> list[int]:
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
