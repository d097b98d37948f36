"""The time of one kernel on a GPU: a roofline with fitted efficiencies and a fixed cost.

For a kernel of class ``c`` with ``F`` FLOPs and ``B`` bytes on a GPU at a precision::

    compute = F / (peak(c, precision) * e_compute[c]) * (1 + k_half / K) * (1 + n_half / N)
    memory  = B / (bandwidth * e_memory[c])
    time    = max(compute, memory) + overhead[c]

``peak`` is the tensor-core peak for matmuls, dense and grouped convolutions and attention, the
fp32 CUDA-core peak otherwise. The GEMM factor (``K``: reduction length, ``N``: output columns per
group; matmul-like classes only) is the efficiency lost to narrow matrices that fill few tensor
core tiles. ``overhead`` is the launch and fixed cost of a kernel (the host's dispatch included:
eager PyTorch cannot launch faster). The constants are fitted on published measurements
(``benchmarks/gpu_calibration/``) and shipped in ``constants.json``; nothing here is per model.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from pytest_modelprof.machines import GpuSpec
from pytest_modelprof.predict.kernels import CLASSES, TENSOR_CORE_CLASSES, Kernel

__all__ = ["Constants", "KernelTime", "kernel_time", "shipped_constants"]

CONSTANTS_FILE = Path(__file__).with_name("constants.json")


@dataclass(frozen=True, slots=True)
class ClassConstants:
    """The efficiency curve of one kernel class."""

    compute_efficiency: float
    memory_efficiency: float
    overhead_s: float


@dataclass(frozen=True)
class Constants:
    """Every class's curve, the GEMM shape constants, and where they were fitted."""

    classes: dict[str, ClassConstants]
    gemm_k_half: float
    gemm_n_half: float
    calibration: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Constants:
        """Read the document ``benchmarks/gpu_calibration/fit.py`` writes."""
        classes = {name: ClassConstants(**data["classes"][name]) for name in CLASSES}
        return cls(
            classes,
            float(data["gemm_k_half"]),
            float(data["gemm_n_half"]),
            dict(data.get("calibration", {})),
        )

    def to_json(self) -> dict[str, Any]:
        """The document form (sorted, rounded by the writer)."""
        return {
            "classes": {
                name: {
                    "compute_efficiency": c.compute_efficiency,
                    "memory_efficiency": c.memory_efficiency,
                    "overhead_s": c.overhead_s,
                }
                for name, c in self.classes.items()
            },
            "gemm_k_half": self.gemm_k_half,
            "gemm_n_half": self.gemm_n_half,
            "calibration": self.calibration,
        }


@cache
def shipped_constants() -> Constants:
    """The constants fitted on published measurements, shipped with the package."""
    return Constants.from_json(json.loads(CONSTANTS_FILE.read_text(encoding="utf-8")))


@dataclass(frozen=True, slots=True)
class KernelTime:
    """A kernel's predicted seconds (for all ``count`` copies) split by what bounds them."""

    kernel: Kernel
    compute_s: float
    memory_s: float
    overhead_s: float

    @property
    def seconds(self) -> float:
        """Total seconds of the kernel's ``count`` launches."""
        return max(self.compute_s, self.memory_s) + self.overhead_s

    @property
    def bound(self) -> str:
        """``compute`` or ``memory``: the larger of the two roofline terms."""
        return "compute" if self.compute_s >= self.memory_s else "memory"


def kernel_time(kernel: Kernel, gpu: GpuSpec, precision: str, c: Constants) -> KernelTime:
    """Predicted time of ``kernel`` on ``gpu`` at ``precision`` (the formula of the module)."""
    cc = c.classes[kernel.cls]
    tensor = kernel.cls in TENSOR_CORE_CLASSES
    peak = gpu.tensor_peak(precision) if tensor else gpu.fp32
    shape = 1.0
    if kernel.gemm_k > 0 and kernel.gemm_n > 0:
        shape = (1 + c.gemm_k_half / kernel.gemm_k) * (1 + c.gemm_n_half / kernel.gemm_n)
    n = kernel.count
    compute = n * kernel.flops / (peak * cc.compute_efficiency) * shape
    memory = n * kernel.bytes / (gpu.bandwidth * cc.memory_efficiency)
    return KernelTime(kernel, compute, memory, n * cc.overhead_s)
