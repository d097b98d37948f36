"""The gate's output for one profile, as plain JSON-able values (no torch, no pydantic).

Dependency-free on purpose: the plugin, the xdist transport, the results document and the
reports all read :class:`GateRecord`, so it sits below all of them.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from typing import Any, Final, Literal

__all__ = [
    "Status",
    "STATUS_ORDER",
    "GateRecord",
    "model_label",
    "error_record",
    "records_to_json",
    "records_from_json",
]

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
    # Every failed limit, one line each; for an ``error`` the message the test failed with.
    failures: list[str] = field(default_factory=list)
    environment: list[str] = field(default_factory=list)  # how the env differs from the baseline
    # Raw measurements for the reports, as JSON: the timing rounds (runtime.NormalisedTiming)
    # and the scaling sweep (sweep.SweepResult) when the test asked for them.
    timing: dict[str, Any] | None = None
    sweep: dict[str, Any] | None = None

    @property
    def label(self) -> str:
        """``nodeid`` or ``nodeid@name``."""
        return self.nodeid if self.name is None else f"{self.nodeid}@{self.name}"


def model_label(model: object) -> str:
    """A model as a report names it before any profile exists: a name as given, a module (or
    any other object) by its class, as the engine labels it."""
    if model is None:
        return "\u2013"
    return model if isinstance(model, str) else type(model).__name__


def error_record(
    nodeid: str,
    message: str,
    *,
    name: str | None = None,
    model: object = None,
    baseline_path: str = "",
) -> GateRecord:
    """A gated test that failed before its gate could judge it (a bad marker, the model's own
    exception, a missing extra, the test's own assertion): one ``error`` row whose failure is
    the message the terminal showed, so no report can show the run as green."""
    return GateRecord(
        nodeid=nodeid,
        name=name,
        model=model_label(model),
        status="error",
        baseline_path=baseline_path,
        failed=True,
        failures=[message],
    )


def records_to_json(records: Iterable[GateRecord]) -> str:
    """Records as one JSON string (the xdist transport on the test report)."""
    return json.dumps([asdict(r) for r in records], sort_keys=True)


def records_from_json(text: str) -> list[GateRecord]:
    """The inverse of :func:`records_to_json`."""
    return [GateRecord(**item) for item in json.loads(text)]


