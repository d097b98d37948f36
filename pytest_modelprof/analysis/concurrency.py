"""How much of a dependency DAG can run at once, and its longest FLOP-weighted chain (pure).

Both functions take the DAG as ``deps[i]`` = the nodes ``i`` waits for, with every dependency
numbered below its dependant (node order is a topological order; the partitioner numbers its
subgraphs that way). That makes each a single forward sweep:

* a node's **stage** is its topological level: 0 without dependencies, else one more than the
  deepest dependency. Nodes in one stage do not depend on each other, so they could all run
  at the same time; the widest stage bounds the useful parallelism.
* the **critical path** is the chain whose FLOPs add up to the most; no schedule, however
  parallel, finishes before it does.
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict

__all__ = ["Concurrency", "CriticalPath", "stages", "concurrency", "critical_path"]


class Concurrency(BaseModel):
    """Topological levels: how many there are, and how many nodes each can run side by side."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    num_stages: int
    max_parallel: int
    mean_parallel: float
    stage_sizes: list[int]


class CriticalPath(BaseModel):
    """The longest dependency chain by FLOPs, source first."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    nodes: list[int]
    flops: int
    share: float  # of all FLOPs: 1.0 means the graph is one chain


def _check(deps: Sequence[Sequence[int]]) -> None:
    for i, ds in enumerate(deps):
        for d in ds:
            if not 0 <= d < i:
                raise ValueError(
                    f"node {i} depends on {d}: nodes must be numbered in topological order"
                )


def stages(deps: Sequence[Sequence[int]]) -> list[int]:
    """The topological level of every node (0 for nodes without dependencies)."""
    _check(deps)
    level: list[int] = []
    for ds in deps:
        level.append(1 + max((level[d] for d in ds), default=-1))
    return level


def concurrency(levels: Sequence[int]) -> Concurrency:
    """Stage count and widths from :func:`stages`."""
    if not levels:
        return Concurrency(num_stages=0, max_parallel=0, mean_parallel=0.0, stage_sizes=[])
    sizes = [0] * (max(levels) + 1)
    for lv in levels:
        sizes[lv] += 1
    return Concurrency(
        num_stages=len(sizes),
        max_parallel=max(sizes),
        mean_parallel=len(levels) / len(sizes),
        stage_sizes=sizes,
    )


def critical_path(deps: Sequence[Sequence[int]], flops: Sequence[int]) -> CriticalPath:
    """Longest path weighted by node FLOPs (dynamic programming in topological order).

    Ties go to the lower-numbered predecessor, so the answer is deterministic.
    """
    _check(deps)
    if len(deps) != len(flops):
        raise ValueError(f"{len(deps)} nodes but {len(flops)} FLOP weights")
    if not deps:
        return CriticalPath(nodes=[], flops=0, share=0.0)
    best: list[int] = []
    prev: list[int] = []
    for i, ds in enumerate(deps):
        before, via = 0, -1
        for d in sorted(ds):
            if best[d] > before or via < 0:
                before, via = best[d], d
        best.append(before + flops[i])
        prev.append(via)
    # The end node: most FLOPs, then the earliest.
    end = max(range(len(best)), key=lambda i: (best[i], -i))
    path = [end]
    while prev[path[-1]] >= 0:
        path.append(prev[path[-1]])
    path.reverse()
    total = sum(flops)
    return CriticalPath(nodes=path, flops=best[end], share=best[end] / total if total else 0.0)
