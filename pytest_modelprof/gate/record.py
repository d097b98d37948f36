"""The gate's output for one profile, as plain JSON-able values (no torch, no pydantic).

Dependency-free on purpose: the plugin, the xdist transport, the results document and the
reports all read :class:`GateRecord`, so it sits below all of them.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from typing import Any, Final, Literal

__all__ = ["Status", "STATUS_ORDER", "GateRecord", "records_to_json", "records_from_json"]

Status = Literal["regressed", "missing", "error", "warning", "improved", "updated", "new", "ok"]
#: Summary order: what needs attention first.
STATUS_ORDER: Final[tuple[Status, ...]] = (
    "regressed",
    "missing",
    "error",
    "warning",  # a limit is crossed but does not fail (undecided timing, timing_strict=False)
    "improved",
    "updated",
    "new",
    "ok",
)
@dataclass(frozen=True)
class GateRecord:
    """One profile's result, as the summary and other plugins see it (JSON-able)."""

    nodeid: str
    name: str | None
    model: str
    status: Status
    baseline_path: str  # relative to the baseline directory, always with "/"
    metrics: dict[str, float] = field(default_factory=dict)
    baseline_metrics: dict[str, float] = field(default_factory=dict)
    failed: bool = False
    # For the reports (HTML, JSON, Markdown): every metric's verdict, the profile and the
    # baseline it was judged against, all as JSON documents (see pytest_modelprof.gate.results).
    checks: list[dict[str, Any]] = field(default_factory=list)
    profile: dict[str, Any] | None = None
    baseline: dict[str, Any] | None = None
    warnings: list[str] = field(default_factory=list)  # rows that warn, not fail (one line each)
    failures: list[str] = field(default_factory=list)  # every failed limit, one line each
    environment: list[str] = field(default_factory=list)  # how the env differs from the baseline
    # Raw measurements for the reports, as JSON: the timing rounds (runtime.NormalisedTiming)
    # and the scaling sweep (sweep.SweepResult) when the test asked for them.
    timing: dict[str, Any] | None = None
    sweep: dict[str, Any] | None = None

    @property
    def label(self) -> str:
        """``nodeid`` or ``nodeid@name``."""
        return self.nodeid if self.name is None else f"{self.nodeid}@{self.name}"


def records_to_json(records: Iterable[GateRecord]) -> str:
    """Records as one JSON string (the xdist transport on the test report)."""
    return json.dumps([asdict(r) for r in records], sort_keys=True)


def records_from_json(text: str) -> list[GateRecord]:
    """The inverse of :func:`records_to_json`."""
    return [GateRecord(**item) for item in json.loads(text)]


