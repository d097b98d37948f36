"""The compile-health document: :class:`CompileHealth` and its breaks (pydantic, torch-free).

Profiles and baselines carry it, so reading one never needs torch; it is measured by
:func:`pytest_modelprof.compile.analyze.analyze_compile`.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict, field_validator

__all__ = ["BreakReason", "CompileHealth", "new_breaks", "format_compile_health"]


class BreakReason(BaseModel):
    """One graph break: Dynamo's reason (its first line) and the user's ``file:line``."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    reason: str
    location: str

    def __str__(self) -> str:
        return f"{self.location}: {self.reason}"


class CompileHealth(BaseModel):
    """How ``torch.compile`` captured a model; ``kernels``/``compile_time`` only when asked for.

    ``graph_breaks`` counts every break Dynamo made (its own list), so it can exceed
    ``graphs - 1``: a break before any op makes no graph, and a break inside a nested call
    breaks each enclosing frame. ``recompiles`` counts frames compiled again after the first
    inputs, over the other shapes that were run.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    graphs: int
    graph_breaks: int
    break_reasons: list[BreakReason]
    ops_per_graph: list[int]
    recompiles: int
    #: Shapes of the tensor inputs of each call, the first inputs first.
    input_shapes: list[list[list[int]]]
    #: What was passed to ``torch.compile(dynamic=...)``.
    dynamic: bool | None
    kernels: int | None = None
    compile_time: float | None = None  # seconds

    @field_validator("compile_time")
    @classmethod
    def _round(cls, value: float | None) -> float | None:
        # Milliseconds are noise for a compile that takes seconds; files diff cleanly.
        return None if value is None else round(value, 3)

    def to_json(self) -> str:
        """Deterministic JSON: sorted keys, indent 2, trailing newline."""
        return json.dumps(self.model_dump(mode="json"), sort_keys=True, indent=2) + "\n"

    @classmethod
    def from_json(cls, text: str) -> CompileHealth:
        """Parse :meth:`to_json` output (raises ``pydantic.ValidationError`` on bad fields)."""
        return cls.model_validate_json(text)


def new_breaks(
    current: Sequence[BreakReason], baseline: Sequence[BreakReason]
) -> list[BreakReason]:
    """Breaks in ``current`` beyond those in ``baseline`` (a multiset difference of their
    locations, in order: a reason's wording may change between versions, the line does not)."""
    left = Counter(br.location for br in baseline)
    out: list[BreakReason] = []
    for br in current:
        if left[br.location] > 0:
            left[br.location] -= 1
        else:
            out.append(br)
    return out


def format_compile_health(health: CompileHealth, name: str = "model") -> str:
    """Plain text: graphs, every break with its location and reason, ops per graph, recompiles."""
    shapes = ", ".join("x".join(map(str, c[0])) if c else "()" for c in health.input_shapes)
    lines = [
        f"compile health of {name} (dynamic={health.dynamic}; inputs {shapes})",
        f"  graphs        {health.graphs}",
        f"  graph breaks  {health.graph_breaks}",
    ]
    for br in health.break_reasons:
        lines.append(f"    {br.location}  {br.reason}")
    lines.append(f"  ops per graph {', '.join(map(str, health.ops_per_graph)) or '-'}")
    lines.append(
        f"  recompiles    {health.recompiles} over {len(health.input_shapes)} input shapes"
    )
    if health.kernels is not None:
        lines.append(f"  kernels       {health.kernels} (Inductor)")
    if health.compile_time is not None:
        lines.append(f"  compile time  {health.compile_time:.2f} s (Inductor, caches off)")
    return "\n".join(lines) + "\n"
