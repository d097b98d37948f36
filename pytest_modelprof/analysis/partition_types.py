"""The partition's documents: one :class:`Subgraph` per fused kernel and the whole report."""

from __future__ import annotations

from pytest_modelprof.analysis.concurrency import Concurrency, CriticalPath
from pytest_modelprof.machines import Machine
from pytest_modelprof.schema import Bottleneck, Frozen, PartitionSummary

__all__ = ["Parallelism", "Subgraph", "PartitionReport"]


class Parallelism(Frozen):
    """How much independent work the subgraph's main output offers a parallel machine."""

    output_elements: int  # elements of the largest tensor it writes: one thread each
    batch: int
    channels: int
    spatial: int  # product of the dimensions after the channels
    groups: int = 1  # convolution groups
    depthwise: bool = False  # a conv with one input channel per group


class Subgraph(Frozen):
    """One fused kernel: its ops (capture indices) and its cost after fusion."""

    id: int
    name: str  # module of the anchor op plus a short pattern
    module: str
    kind: str  # conv, matmul, attention, elementwise, norm, pool, ...
    pattern: str  # families in the order they fused, e.g. "conv+norm+activation"
    ops: list[int]
    flops: int
    macs: int
    params: int
    param_names: list[str]
    bytes_read: int  # after fusion
    bytes_written: int  # after fusion
    unfused_bytes: int  # what its ops move when each runs as its own kernel
    arithmetic_intensity: float
    bottleneck: Bottleneck
    parallelism: Parallelism
    depends_on: list[int]
    stage: int

    @property
    def memory(self) -> int:
        """Bytes moved after fusion."""
        return self.bytes_read + self.bytes_written


class PartitionReport(Frozen):
    """Every subgraph, in dependency order, with the concurrency and critical-path analysis."""

    machine: Machine
    subgraphs: list[Subgraph]
    total_flops: int
    total_macs: int
    total_params: int
    unread_params: int  # parameters of modules no op read (uncalled modules, eval-only heads)
    fused_bytes: int
    unfused_bytes: int
    fused_arithmetic_intensity: float
    unfused_arithmetic_intensity: float
    kind_counts: dict[str, int]
    pattern_counts: dict[str, int]
    depthwise_convs: int
    concurrency: Concurrency
    critical_path: CriticalPath

    def summary(self) -> PartitionSummary:
        """The headline numbers only."""
        return PartitionSummary(
            num_subgraphs=len(self.subgraphs),
            num_stages=self.concurrency.num_stages,
            max_parallel=self.concurrency.max_parallel,
            critical_path_flops=self.critical_path.flops,
            critical_path_length=len(self.critical_path.nodes),
            fused_bytes=self.fused_bytes,
            unfused_bytes=self.unfused_bytes,
            fused_arithmetic_intensity=self.fused_arithmetic_intensity,
            unfused_arithmetic_intensity=self.unfused_arithmetic_intensity,
            kind_counts=dict(self.kind_counts),
        )

    def top(self, n: int = 10) -> list[Subgraph]:
        """The ``n`` subgraphs with the most FLOPs (ties: dependency order)."""
        return sorted(self.subgraphs, key=lambda s: (-s.flops, s.id))[:n]
