"""The ``modelprof bench --json`` document (:class:`BenchReport`) and the run it belongs to.

The document has a fixed set of keys so that other tools can read it::

    runtime.{forward,backward,training_step}.{mean_ms,std_ms,min_ms,max_ms,median_ms,rounds}
    memory.peak_bytes  memory.breakdown.{parameters,gradients,optimizer_state,activations}
    flops.total  flops.breakdown.{<op family>: FLOPs}
    hardware.{cpu,cores,torch,cuda_available,gpu_name,gpu_memory_bytes}
    timestamp

Written as every document of the package is: sorted keys, fixed float rounding, indent 2, a
trailing newline (:func:`~pytest_modelprof.schema.dumps_deterministic`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from pytest_modelprof.runtime.memory import MemoryStats
from pytest_modelprof.runtime.module_timing import ModuleTimings
from pytest_modelprof.runtime.timing import TimingStats
from pytest_modelprof.schema import Frozen, dumps_deterministic

__all__ = ["BenchReport", "BenchRun", "HardwareInfo", "OptimizerName"]

#: The names of :data:`pytest_modelprof.optimizers.OPTIMIZER_ARGS`, the one table of optimizers.
OptimizerName = Literal["sgd", "sgd-momentum", "adam", "adamw"]


class RuntimeStats(Frozen):
    """Summary of the timed rounds of one phase, in milliseconds."""

    mean_ms: float
    std_ms: float
    min_ms: float
    max_ms: float
    median_ms: float
    rounds: int

    @classmethod
    def of(cls, stats: TimingStats) -> RuntimeStats:
        """The figures of a :class:`TimingStats`."""
        return cls(mean_ms=stats.mean, std_ms=stats.std, min_ms=stats.min, max_ms=stats.max,
                   median_ms=stats.median, rounds=stats.rounds)


class RuntimeSection(Frozen):
    """Forward alone, backward alone (its forward untimed), and a whole optimizer step."""

    forward: RuntimeStats
    backward: RuntimeStats
    training_step: RuntimeStats


class MemoryBreakdown(Frozen):
    """What the peak was made of (bytes); the four parts add up to ``peak_bytes``."""

    parameters: int  # weights and buffers
    gradients: int
    optimizer_state: int
    activations: int  # inputs, saved tensors and temporaries


class MemorySection(Frozen):
    """Peak memory of one training step, and its parts."""

    peak_bytes: int
    breakdown: MemoryBreakdown

    @classmethod
    def of(cls, stats: MemoryStats) -> MemorySection:
        """Fold a :class:`MemoryStats` breakdown into the four parts of the document."""
        b = stats.breakdown
        return cls(
            peak_bytes=stats.peak_bytes,
            breakdown=MemoryBreakdown(
                parameters=b.get("parameters", 0) + b.get("buffers", 0),
                gradients=b.get("gradients", 0),
                optimizer_state=b.get("optimizer_state", 0),
                activations=b.get("inputs", 0) + b.get("activations", 0),
            ),
        )


class FlopsSection(Frozen):
    """Counted FLOPs of one forward pass, in total and per op family (families with FLOPs)."""

    total: int
    breakdown: dict[str, int]


class HardwareInfo(Frozen):
    """The machine and the torch build the figures come from."""

    cpu: str
    cores: int
    torch: str
    cuda_available: bool
    gpu_name: str | None
    gpu_memory_bytes: int | None


class BenchReport(Frozen):
    """The ``modelprof bench --json`` document."""

    runtime: RuntimeSection
    memory: MemorySection
    flops: FlopsSection
    hardware: HardwareInfo
    timestamp: str  # ISO 8601, UTC
    # CPU instructions per call (``modelprof bench --instructions``: instructions.counts
    # .InstructionCounts as JSON); left out otherwise.
    instructions: dict[str, Any] | None = None
    # The forward timed at another commit and here, paired (``modelprof bench --against``).
    against: dict[str, Any] | None = None
    # The forward's time predicted on a named GPU (``modelprof bench --machine``).
    predicted: dict[str, Any] | None = None

    def to_json(self) -> str:
        """Sorted keys, fixed float rounding, indent 2, trailing newline."""
        data = self.model_dump(mode="json")
        for optional in ("instructions", "against", "predicted"):
            if data.get(optional) is None:
                data.pop(optional, None)
        return dumps_deterministic(data)


@dataclass(frozen=True)
class BenchRun:
    """A bench document plus what a report shows beside it (not part of the document)."""

    model: str
    device: str
    dtype: str
    input_shapes: list[list[int]]
    optimizer: OptimizerName
    report: BenchReport
    modules: ModuleTimings | None
