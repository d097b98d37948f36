"""The one record of one gated profile: what the gate decided, every check row, the profile
and the baseline it was judged against.

:class:`ProfileResult` is what :func:`pytest_modelprof.gate.evaluate.evaluate` makes, what
travels on the test report under xdist, what ``pytest_modelprof_record`` hooks get, and what the
results document (:mod:`pytest_modelprof.results.document`) lists: one type, so a field added
here reaches every reader. Torch-free (pydantic and the schema only).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any, Final, Literal

from pytest_modelprof.baseline.check import Check
from pytest_modelprof.baseline.document import BaselineDocument
from pytest_modelprof.schema import Frozen, ModelProfile

__all__ = [
    "Status",
    "STATUS_ORDER",
    "SourceLocation",
    "ProfileResult",
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
    "warning",  # a limit is crossed but does not fail (undecided timing, timing_verdicts='warn')
    "improved",
    "updated",
    "new",
    "ok",
)


class SourceLocation(Frozen):
    """Where a test is defined: a path relative to the rootdir (with ``/``) and a 1-based line."""

    path: str
    line: int


class ProfileResult(Frozen):
    """One gated profile of one test: its status, the check rows, the profile and the baseline."""

    nodeid: str
    name: str | None = None
    model: str
    status: Status
    failed: bool = False
    baseline_path: str = ""  # relative to the baseline directory, always with "/"
    location: SourceLocation | None = None
    checks: list[Check] = []
    # One line per failed limit and per warning, as the terminal printed them; for an
    # ``error`` the message the test failed with.
    failures: list[str] = []
    warnings: list[str] = []
    # How the run's environment differs from the baseline's ("torch 2.15.0 -> 2.14.1").
    environment: list[str] = []
    # The metric values measured now and stored in the baseline, by metric name.
    metrics: dict[str, float] = {}
    baseline_metrics: dict[str, float] = {}
    profile: ModelProfile | None = None
    baseline: BaselineDocument | None = None
    # Plain JSON so that reading results never needs torch: runtime.NormalisedTiming (the
    # current timing rounds; the baseline's are in ``baseline.timing``) and sweep.SweepResult.
    timing: dict[str, Any] | None = None
    sweep: dict[str, Any] | None = None

    @property
    def label(self) -> str:
        """``nodeid`` or ``nodeid@name``, as in the terminal summary."""
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
) -> ProfileResult:
    """A gated test that failed before its gate could judge it (a bad marker, the model's own
    exception, a missing extra, the test's own assertion): one ``error`` row whose failure is
    the message the terminal showed, so no report can show the run as green."""
    return ProfileResult(
        nodeid=nodeid,
        name=name,
        model=model_label(model),
        status="error",
        baseline_path=baseline_path,
        failed=True,
        failures=[message],
    )


def records_to_json(records: Iterable[ProfileResult]) -> str:
    """Records as one JSON string (the xdist transport on the test report)."""
    return json.dumps([r.model_dump(mode="json") for r in records], sort_keys=True)


def records_from_json(text: str) -> list[ProfileResult]:
    """The inverse of :func:`records_to_json`."""
    return [ProfileResult.model_validate(item) for item in json.loads(text)]
