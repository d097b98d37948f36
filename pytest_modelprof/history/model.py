"""The history document: what ``modelprof history --json`` writes, one pydantic model."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from pytest_modelprof.schema import dumps_deterministic

__all__ = [
    "HISTORY_SCHEMA_VERSION",
    "CommitRow",
    "Point",
    "MetricSeries",
    "TestHistory",
    "Step",
    "Coverage",
    "HistoryDocument",
]

HISTORY_SCHEMA_VERSION = 1


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class CommitRow(_Frozen):
    """A commit that changed at least one of the baselines shown, in history order."""

    hash: str
    short: str
    date: str  # committer date, UTC, ISO 8601
    subject: str


class Point(_Frozen):
    """A metric's value in one committed version of a baseline."""

    commit: str  # full hash; ``commits`` has its date and subject
    value: int | float
    delta: int | float | None = None  # against the previous version; None at the first
    change: float | None = None  # relative delta; +-inf from a zero value
    # What changed in the environment since the previous version: "torch 2.14.1 -> 2.15.0".
    environment: list[str] = []


class MetricSeries(_Frozen):
    """One metric of one test over its committed versions."""

    metric: str
    label: str
    direction: str  # "lower" or "higher" is better
    points: list[Point]


class TestHistory(_Frozen):
    """One profile (test and ``name=``), followed through renames."""

    test: str  # the node id of its newest version
    name: str | None
    model: str
    path: str  # the newest baseline file, relative to the repository
    renamed_from: list[str] = []  # earlier test ids, oldest first
    removed_in: str | None = None  # the commit that deleted its baseline, if one did
    versions: int
    series: list[MetricSeries]


class Step(_Frozen):
    """A change of one metric between two consecutive versions (the largest-steps table)."""

    test: str
    name: str | None
    metric: str
    commit: str
    before: int | float
    after: int | float
    delta: int | float
    change: float | None
    worse: bool
    environment: list[str] = []


class Coverage(_Frozen):
    """How much history was read: all of it, or what a shallow clone holds."""

    head: str
    since: str | None
    paths: list[str]
    commits_seen: int  # commits that changed a baseline shown
    first_commit: str | None
    first_date: str | None
    shallow: bool


class HistoryDocument(_Frozen):
    """``modelprof history``: every test's metrics over the commits that changed them."""

    schema_version: int = HISTORY_SCHEMA_VERSION
    coverage: Coverage
    metrics: list[str]
    commits: list[CommitRow]
    tests: list[TestHistory]
    largest_steps: list[Step]
    notes: list[str] = []  # versions that could not be read, and why

    def to_json(self) -> str:
        """Deterministic JSON: sorted keys, fixed float rounding, indent 2, trailing newline."""
        return dumps_deterministic(self.model_dump(mode="json"))
