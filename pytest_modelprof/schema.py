"""The persisted profile document: :class:`ModelProfile` and its parts (pydantic v2, frozen)."""

from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from pytest_modelprof.compile_health import CompileHealth
from pytest_modelprof.machines import Machine

__all__ = [
    "Frozen",
    "describe_inputs",
    "Bottleneck",
    "CaptureMode",
    "TensorSpec",
    "CaptureInfo",
    "Environment",
    "LayerStats",
    "OpFamilyStats",
    "OpCalls",
    "UncountedOp",
    "PartitionSummary",
    "ModelProfile",
    "dumps_deterministic",
    "migrate_profile",
]

PROFILE_SCHEMA_VERSION = 2

CaptureMode = Literal["meta", "fake", "real"]
Bottleneck = Literal["compute-bound", "memory-bound", "none"]

# Floats are rounded to this many decimals on write so that files diff cleanly.
FLOAT_DIGITS = 6


class Frozen(BaseModel):
    """The base of every persisted document's models: immutable, unknown fields refused."""

    model_config = ConfigDict(frozen=True, extra="forbid")


class TensorSpec(Frozen):
    """One model input: positional (``name=None``) or keyword (``name="input_ids"``)."""

    name: str | None = None
    shape: list[int]
    dtype: str


def describe_inputs(specs: list[TensorSpec]) -> str:
    """``"1×3×224×224 float32, input_ids=1×128 int64"``: inputs as the reports show them."""
    return ", ".join(
        (f"{t.name}=" if t.name else "") + "\u00d7".join(str(d) for d in t.shape) + f" {t.dtype}"
        for t in specs
    )


class CaptureInfo(Frozen):
    """Which tensors the capture ran on and why; ``attempts`` lists the modes that failed first."""

    mode: CaptureMode
    requested: str
    reason: str
    attempts: list[str] = []
    warmup: bool = False


class Environment(Frozen):
    """Where the profile was taken."""

    torch_version: str
    python_version: str
    platform: str
    device: str
    dtype: str


class LayerStats(Frozen):
    """Cost of the ops that ran directly in one module (its own scope, not its children)."""

    name: str
    type: str
    calls: int
    flops: int
    macs: int
    params: int
    bytes_read: int
    bytes_written: int
    traffic: int  # bytes read + written
    arithmetic_intensity: float
    bottleneck: Bottleneck
    output_shape: list[int] | None = None


class OpFamilyStats(Frozen):
    """Aggregate of one op family (conv, matmul, norm, ...)."""

    family: str
    count: int
    flops: int
    macs: int
    traffic: int
    share: float


class OpCalls(Frozen):
    """How often one ATen op ran in one layer, and the lines of model code that called it."""

    module: str  # the layer's name, as in ``layers`` ("(model)" for the model's own forward)
    op: str  # overload name, e.g. "aten.relu.default"
    count: int
    sites: list[str] = []  # "net.py:12", first seen first; none for backward ops


class UncountedOp(Frozen):
    """An ATen op that ran but has no cost formula: recorded, never silently zero."""

    op: str
    count: int
    modules: list[str]
    # Bytes its calls read and wrote: an uncounted op that moves far more data hides cost too.
    traffic: int = 0


class PartitionSummary(Frozen):
    """Headline numbers of the fused-subgraph partition (``analysis.partition``)."""

    num_subgraphs: int
    num_stages: int
    max_parallel: int
    critical_path_flops: int
    critical_path_length: int
    fused_bytes: int
    unfused_bytes: int
    fused_arithmetic_intensity: float
    unfused_arithmetic_intensity: float
    kind_counts: dict[str, int]


class ModelProfile(Frozen):
    """Everything one capture measured. Totals include backward ops when ``include_backward``."""

    schema_version: int = PROFILE_SCHEMA_VERSION
    model: str
    inputs: list[TensorSpec]
    capture: CaptureInfo
    environment: Environment
    machine: Machine
    include_backward: bool = False
    total_flops: int
    total_macs: int
    backward_flops: int = 0
    backward_macs: int = 0
    total_params: int
    param_bytes: int
    buffer_bytes: int
    activation_bytes: int
    total_traffic: int  # bytes every op read and wrote
    peak_activation_bytes: int
    arithmetic_intensity: float
    num_ops: int
    op_breakdown: list[OpFamilyStats]
    layers: list[LayerStats]
    # Calls of each op per layer (views left out, as in ``op_breakdown``): what a report names
    # when a count changed. Empty in profiles written before it was recorded.
    op_calls: list[OpCalls] = []
    uncounted_ops: list[UncountedOp] = []
    uncalled_modules: list[str] = []
    partition: PartitionSummary | None = None  # None in profiles written before the partitioner
    # torch.compile health (pytest_modelprof.compile), only when a compile limit asked for it.
    compile_health: CompileHealth | None = None

    __hash__ = None  # type: ignore[assignment]  # a document of lists, compared by value

    @property
    def forward_flops(self) -> int:
        return self.total_flops - self.backward_flops

    @property
    def forward_macs(self) -> int:
        return self.total_macs - self.backward_macs

    def to_json(self) -> str:
        """Deterministic JSON: sorted keys, fixed float rounding, indent 2, trailing newline."""
        return dumps_deterministic(self.model_dump(mode="json"))

    @classmethod
    def from_json(cls, text: str) -> ModelProfile:
        """Parse and validate a profile file, migrating one of an earlier schema version."""
        return cls.model_validate(migrate_profile(json.loads(text)))


#: The fields profile schema 2 renamed, old -> new, by where they are ("" is the profile): the
#: bytes every op read and wrote are ``traffic``, compile time ``compile_time``.
PROFILE_V2_RENAMES: dict[str, dict[str, str]] = {
    "": {"total_memory": "total_traffic"},
    "layers": {"memory": "traffic"},
    "op_breakdown": {"memory": "traffic"},
    "uncounted_ops": {"memory": "traffic"},
    "compile_health": {"compile_s": "compile_time"},
}


def _renamed(data: Any, renames: dict[str, str]) -> Any:
    """A dict with its keys renamed, each dict of a list too; anything else as it is."""
    if isinstance(data, list):
        return [_renamed(item, renames) for item in data]
    return {renames.get(k, k): v for k, v in data.items()} if isinstance(data, dict) else data


def _profile_v1_to_v2(data: dict[str, Any]) -> dict[str, Any]:
    """v2 names each quantity with one word (:data:`PROFILE_V2_RENAMES`)."""
    out = _renamed(data, PROFILE_V2_RENAMES[""])
    for key, renames in PROFILE_V2_RENAMES.items():
        if key and key in out:
            out[key] = _renamed(out[key], renames)
    return {**out, "schema_version": 2}


def migrate_profile(data: Any) -> Any:
    """A profile document (a plain dict) brought up to :data:`PROFILE_SCHEMA_VERSION`, one step
    at a time; anything else, or a version without a step, is returned for validation to judge.
    """
    steps = {1: _profile_v1_to_v2}
    while isinstance(data, dict) and isinstance(version := data.get("schema_version"), int):
        step = steps.get(version) if not isinstance(version, bool) else None
        if step is None:
            return data
        data = step(data)
    return data


def _round_floats(value: Any) -> Any:
    if isinstance(value, float):
        rounded = round(value, FLOAT_DIGITS)
        return 0.0 if rounded == 0 else rounded  # no "-0.0" in files
    if isinstance(value, dict):
        return {k: _round_floats(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_round_floats(v) for v in value]
    return value


def dumps_deterministic(data: Any) -> str:
    """The one JSON writer for every persisted document."""
    return json.dumps(_round_floats(data), sort_keys=True, indent=2, ensure_ascii=False) + "\n"
