"""What one capture produces: an op list with module scopes, costs, bytes and dataflow edges."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from pytest_modelprof.costs.registry import TensorMeta

__all__ = ["OpRecord", "ModuleCall", "Capture", "Phase"]

Phase = Literal["forward", "backward"]


@dataclass(slots=True)
class OpRecord:
    """One ATen op call. ``family`` is ``None`` when no cost formula exists (uncounted)."""

    index: int
    op: str  # overload name, e.g. "aten.convolution.default"
    family: str | None
    module: str  # dotted module path; "" is the model itself
    phase: Phase
    inputs: tuple[TensorMeta, ...]
    outputs: tuple[TensorMeta, ...]
    flops: int
    macs: int
    bytes_read: int
    bytes_written: int
    producers: tuple[int, ...]  # indices of the ops that produced this op's tensor inputs
    params: tuple[str, ...]  # names of parameters/buffers read directly
    is_view: bool = False  # aliases an input without moving data
    # The producer of each entry of ``inputs`` (-1: a parameter, model input or constant).
    input_producers: tuple[int, ...] = ()
    # Index into ``Capture.sites`` of the model code line that called it (-1: none).
    site: int = -1

    @property
    def memory(self) -> int:
        return self.bytes_read + self.bytes_written


@dataclass(slots=True)
class ModuleCall:
    """A module's calls during the forward: how many, its type and its last output shape."""

    path: str
    type: str
    calls: int = 0
    output_shape: tuple[int, ...] | None = None


@dataclass
class Capture:
    """The full record of one profiled run (never persisted as such; the profile is)."""

    ops: list[OpRecord] = field(default_factory=list)
    modules: dict[str, ModuleCall] = field(default_factory=dict)
    module_types: dict[str, str] = field(default_factory=dict)
    module_params: dict[str, int] = field(default_factory=dict)  # own (non-recursive) params
    uncalled_modules: list[str] = field(default_factory=list)
    peak_activation_bytes: int = 0
    activation_bytes: int = 0
    input_ops: tuple[int, ...] = ()  # ops that consumed the model inputs
    output_ops: tuple[int, ...] = ()  # ops that produced the model outputs
    sites: list[str] = field(default_factory=list)  # "net.py:12" of each OpRecord.site
