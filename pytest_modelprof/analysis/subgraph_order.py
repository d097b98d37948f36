"""The partitioner's subgraphs under construction and their dependency order (pure).

Subgraphs grow one op at a time; joining an op may add dependencies to an older subgraph.
A join must not close a cycle, and asking "does A depend on B?" by searching everything A
depends on made the partition quadratic in depth. Subgraphs therefore keep a topological
``order`` (Pearce and Kelly's dynamic topological sort), and the search stops at subgraphs
ordered below its target, which cannot reach it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["Group", "depends_on", "add_deps"]


@dataclass(slots=True)
class Group:
    """A subgraph being grown: its ops, what it still accepts, and its dependencies."""

    kind: str
    # What it still accepts: "alone" nothing; "anchor"/"linear"/"closed" pointwise epilogues;
    # "chain" pointwise and copies; "open-qk" (q @ k^T) also softmax; "open-attn" also @ v.
    state: str
    ops: list[int]
    families: list[str]
    deps: set[int] = field(default_factory=set)
    dependants: set[int] = field(default_factory=set)  # the reverse of deps
    order: int = 0  # a topological order: every dependency's is lower (see add_deps)


def depends_on(groups: list[Group], start: int, target: int) -> bool:
    """Whether group ``start`` depends, directly or through others, on group ``target``.

    Groups keep a topological ``order`` (every dependency has a lower order than its
    dependant), so a group ordered below ``target`` cannot reach it and the search stops
    there: it stays within the groups between the two, local in a deep model, instead of
    re-searching every earlier group for every candidate (quadratic in depth).
    """
    floor = groups[target].order
    seen = {start}
    stack = [start]
    while stack:
        g = stack.pop()
        for d in groups[g].deps:
            if d == target:
                return True
            if d not in seen and groups[d].order > floor:
                seen.add(d)
                stack.append(d)
    return False


def add_deps(groups: list[Group], g: int, new: set[int]) -> None:
    """Add the dependencies ``g -> new`` (known not to close a cycle) and restore the order.

    Pearce and Kelly's dynamic topological order: when a new dependency is ordered above
    ``g``, the groups between the two that depend on ``g`` (F) and those the new
    dependencies depend on (B) swap places, B first, reusing their order numbers.
    """
    grp = groups[g]
    for h in sorted(new - grp.deps):  # one edge at a time, each on a consistent order
        grp.deps.add(h)
        groups[h].dependants.add(g)
        upper, lower = groups[h].order, grp.order
        if upper < lower:
            continue  # already in order: the common case
        forward = _reach(groups, [g], upper, up=True)
        backward = _reach(groups, [h], lower, up=False)
        moved = sorted(backward, key=lambda x: groups[x].order)
        moved += sorted(forward, key=lambda x: groups[x].order)
        slots = sorted(groups[x].order for x in moved)
        for x, slot in zip(moved, slots, strict=True):
            groups[x].order = slot


def _reach(groups: list[Group], starts: list[int], bound: int, *, up: bool) -> list[int]:
    """Groups reachable from ``starts`` through dependants (``up``) ordered at most ``bound``,
    or through dependencies ordered above ``bound``."""
    seen = set(starts)
    stack = list(starts)
    while stack:
        x = stack.pop()
        nxt = groups[x].dependants if up else groups[x].deps
        for y in nxt:
            inside = groups[y].order <= bound if up else groups[y].order > bound
            if y not in seen and inside:
                seen.add(y)
                stack.append(y)
    return list(seen)
