"""The history document: what ``modelprof history --json`` writes, one pydantic model."""

from __future__ import annotations

from pytest_modelprof.schema import Frozen

__all__ = [
    "CommitRow",
    "Point",
    "MetricSeries",
    "TestHistory",
    "Step",
    "Coverage",
    "HistoryDocument",
]

#: 2: series carry the metric names of 0.1.0 (``traffic``, ``peak_activations``, ...).
HISTORY_SCHEMA_VERSION = 2


# Fields are declared in alphabetical order: pydantic writes them in declaration order, so its
# JSON writer (Rust: a third of the time of json.dumps with an indent, for thousands of points)
# gives sorted keys, like schema.dumps_deterministic; floats are rounded to FLOAT_DIGITS where
# they are made (history.build). A test checks both.


class CommitRow(Frozen):
    """A commit that changed at least one of the baselines shown, in history order."""

    date: str  # committer date, UTC, ISO 8601
    hash: str
    short: str
    subject: str


class Point(Frozen):
    """A metric's value in one committed version of a baseline."""

    change: float | None = None  # relative delta; None at the first point and from zero
    commit: str  # full hash; ``commits`` has its date and subject
    delta: int | float | None = None  # against the previous version; None at the first
    # What changed in the environment since the previous version: "torch 2.14.1 -> 2.15.0".
    environment: list[str] = []
    value: int | float


class MetricSeries(Frozen):
    """One metric of one test over its committed versions."""

    direction: str  # "lower" or "higher" is better
    label: str
    metric: str
    points: list[Point]


class TestHistory(Frozen):
    """One profile (test and ``name=``), followed through renames."""

    model: str
    name: str | None
    path: str  # the newest baseline file, relative to the repository
    removed_in: str | None = None  # the commit that deleted its baseline, if one did
    renamed_from: list[str] = []  # earlier test ids, oldest first
    series: list[MetricSeries]
    test: str  # the node id of its newest version
    versions: int


class Step(Frozen):
    """A change of one metric between two consecutive versions (the largest-steps table)."""

    after: int | float
    before: int | float
    change: float | None
    commit: str
    delta: int | float
    environment: list[str] = []
    metric: str
    name: str | None
    test: str
    worse: bool


class Coverage(Frozen):
    """How much history was read: all of it, or what a shallow clone holds."""

    commits_seen: int  # commits that changed a file under ``paths``
    first_commit: str | None
    first_date: str | None
    head: str
    paths: list[str]
    shallow: bool
    since: str | None


class HistoryDocument(Frozen):
    """``modelprof history``: every test's metrics over the commits that changed them."""

    commits: list[CommitRow]
    coverage: Coverage
    largest_steps: list[Step]
    metrics: list[str]
    notes: list[str] = []  # versions that could not be read, and why
    schema_version: int = HISTORY_SCHEMA_VERSION
    tests: list[TestHistory]

    def to_json(self) -> str:
        """Deterministic JSON: sorted keys, fixed float rounding, indent 2, trailing newline."""
        return self.model_dump_json(indent=2) + "\n"
