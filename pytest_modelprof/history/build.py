"""Baselines over commits: follow each file through renames, read every version with the
baseline document model (old schema versions migrate on read), and cut it into series per test
and metric. Pure over what :mod:`~pytest_modelprof.history.git` read; no torch.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from pytest_modelprof.baseline.environment import fact_changes
from pytest_modelprof.baseline.metrics import BUILTIN_METRICS, Metric, active_metrics
from pytest_modelprof.errors import ModelprofError, did_you_mean
from pytest_modelprof.history.git import (
    Commit,
    LogEntry,
    commits,
    find_repo,
    list_tree,
    read_blobs,
    read_log,
)
from pytest_modelprof.history.model import (
    CommitRow,
    Coverage,
    HistoryDocument,
    MetricSeries,
    Point,
    Step,
    TestHistory,
)
from pytest_modelprof.history.versions import VersionSummary, read_version
from pytest_modelprof.schema import FLOAT_DIGITS

__all__ = ["HistoryError", "pick_metrics", "read_history"]

#: Shown when ``--metric`` is not given: the gate's summary metrics that a version recorded,
#: less the derived ones (arithmetic intensity moves whenever FLOPs or bytes do).
DEFAULT_METRICS = tuple(m.name for m in BUILTIN_METRICS if m.summary and not m.derived_from)

class HistoryError(ModelprofError):
    """Nothing to show for what was asked: no baseline history, an unknown metric or test."""


def pick_metrics(names: Sequence[str] | None) -> list[Metric]:
    """The metrics asked for, from the metric table; a typo gets the close names."""
    if not names:
        return [m for m in active_metrics() if m.name in DEFAULT_METRICS]
    known = [m.name for m in active_metrics()]
    picked: list[Metric] = []
    for name in names:
        metric = active_metrics().by_name(name)
        if metric is None:
            hint = did_you_mean(name, known, n=3, cutoff=0.5)
            raise HistoryError(f"unknown metric {name!r}{hint or '.'} Known metrics: "
                               f"{', '.join(known)}")
        if metric not in picked:
            picked.append(metric)
    return picked


@dataclass
class _Version:
    commit: Commit
    path: str
    blob: str
    doc: VersionSummary


@dataclass
class _Lineage:
    """One baseline file followed through renames."""

    versions: list[_Version] = field(default_factory=list)
    blob: str = ""
    removed_in: Commit | None = None


def _is_baseline(path: str) -> bool:
    parts = path.split("/")
    return path.endswith(".json") and not any(p.startswith(".") for p in parts)


class _Reader:
    """Parse each blob once (many versions share one); a version that does not load is a note."""

    def __init__(self, blobs: Mapping[str, bytes]) -> None:
        self.blobs = blobs
        self.docs: dict[str, VersionSummary | str] = {}
        self.notes: list[str] = []

    def read(self, blob: str, path: str, commit: Commit) -> VersionSummary | None:
        if blob not in self.docs:
            data = self.blobs.get(blob)
            if data is None:
                self.docs[blob] = "its content is not in this clone"
            else:
                try:
                    self.docs[blob] = read_version(data, source=path)
                except ModelprofError as exc:
                    # The advice to rewrite the file is for the current one, not a past version.
                    self.docs[blob] = " ".join(str(exc).split()).split(". Delete it")[0]
        doc = self.docs[blob]
        if isinstance(doc, str):
            self.notes.append(f"{path} at {commit.short} skipped: {doc.removeprefix(path + ': ')}")
            return None
        return doc


def _lineages(entries: Sequence[LogEntry], start: Mapping[str, str], start_commit: Commit | None,
              reader: _Reader) -> list[_Lineage]:
    active: dict[str, _Lineage] = {}
    done: list[_Lineage] = []

    def add(lineage: _Lineage, commit: Commit, path: str, blob: str) -> None:
        if blob == lineage.blob:
            return  # renamed, content unchanged: no new version
        lineage.blob = blob
        doc = reader.read(blob, path, commit)
        if doc is not None:
            lineage.versions.append(_Version(commit, path, blob, doc))

    if start_commit is not None:
        for path, blob in sorted(start.items()):
            if _is_baseline(path):
                active[path] = _Lineage()
                add(active[path], start_commit, path, blob)
    for entry in entries:
        for change in entry.changes:
            if not _is_baseline(change.path) and not (
                change.old_path and _is_baseline(change.old_path)
            ):
                continue
            if change.status == "D":
                gone = active.pop(change.path, None)
                if gone is not None:
                    gone.removed_in = entry.commit
                    done.append(gone)
                continue
            if change.status == "R" and change.old_path is not None:
                lineage = active.pop(change.old_path, None) or _Lineage()
            else:  # A, M, T, or C (a copy starts a lineage of its own)
                lineage = active.get(change.path) or _Lineage()
            if not _is_baseline(change.path):  # renamed away from a baseline name
                lineage.removed_in = entry.commit
                done.append(lineage)
                continue
            active[change.path] = lineage
            add(lineage, entry.commit, change.path, change.blob)
    return [lin for lin in [*done, *active.values()] if lin.versions]


def _key(doc: VersionSummary) -> tuple[str, str]:
    return doc.test, doc.name or ""


def _merge(lineages: list[_Lineage], order: Mapping[str, int]) -> list[list[_Version]]:
    """Lineages whose newest versions are the same profile (a baseline deleted and added
    again, or moved without git seeing a rename) become one, in commit order."""
    groups: dict[tuple[str, str], list[_Lineage]] = {}
    for lin in lineages:
        groups.setdefault(_key(lin.versions[-1].doc), []).append(lin)
    merged = []
    for group in groups.values():
        versions = sorted((v for lin in group for v in lin.versions),
                          key=lambda v: order[v.commit.hash])
        merged.append(versions)
    return merged


def _matches(versions: Sequence[_Version], wanted: str) -> bool:
    for v in versions:
        test = v.doc.test
        if wanted in (test, v.path) or test.startswith(wanted + "[") or test.startswith(
            wanted + "::"
        ):
            return True
    return False


def build_history(
    entries: Sequence[LogEntry],
    blobs: Mapping[str, bytes],
    metrics: Sequence[Metric],
    *,
    coverage: Coverage,
    start: Mapping[str, str] | None = None,
    start_commit: Commit | None = None,
    tests: Sequence[str] = (),
    top: int = 20,
) -> HistoryDocument:
    """The history document of the log ``entries`` (oldest first) and their ``blobs``."""
    reader = _Reader(blobs)
    lineages = _lineages(entries, start or {}, start_commit, reader)
    commits_in_order = ([start_commit] if start_commit else []) + [e.commit for e in entries]
    order = {c.hash: i for i, c in enumerate(commits_in_order)}
    profiles = _merge(lineages, order)
    for wanted in tests:
        if not any(_matches(p, wanted) for p in profiles):
            known = sorted({v.doc.test for p in profiles for v in p})
            hint = did_you_mean(wanted, known, n=3, cutoff=0.5) or (
                f"; the history holds {len(known)} tests" if known else "")
            raise HistoryError(f"no baseline history for test {wanted!r} under "
                               f"{', '.join(coverage.paths) or 'the repository'}{hint}")
    if tests:
        profiles = [p for p in profiles if any(_matches(p, w) for w in tests)]
    removed = {id(lin.versions[-1]): lin.removed_in for lin in lineages}
    histories: list[TestHistory] = []
    used: set[str] = set()
    # Sort keys first; only the rows that make the table become Step records.
    steps: list[tuple[tuple[float, float, int, str, str], VersionSummary, Metric, Point]] = []
    for versions in profiles:
        last = versions[-1]
        renamed: list[str] = []
        for v in versions:
            if v.doc.test != last.doc.test and v.doc.test not in renamed:
                renamed.append(v.doc.test)
        series = []
        for metric in metrics:
            points = _points(versions, metric)
            if points:
                series.append(MetricSeries(metric=metric.name, label=metric.label,
                                           direction=metric.direction, points=points))
                steps += [(_step_key(last.doc, metric, p, order), last.doc, metric, p)
                          for p in points if p.delta]
        used.update(v.commit.hash for v in versions)
        gone = removed.get(id(last))
        if gone is not None:
            used.add(gone.hash)
        histories.append(TestHistory(
            test=last.doc.test, name=last.doc.name, model=last.doc.model, path=last.path,
            renamed_from=renamed, removed_in=gone.hash if gone else None,
            versions=len(versions), series=series,
        ))
    histories.sort(key=lambda h: (h.test, h.name or ""))
    steps.sort(key=lambda s: s[0])
    return HistoryDocument(
        coverage=coverage,
        metrics=[m.name for m in metrics],
        commits=[CommitRow(hash=c.hash, short=c.short, date=c.date, subject=c.subject)
                 for c in commits_in_order if c.hash in used],
        tests=histories,
        largest_steps=[_step(doc, metric, p) for _, doc, metric, p in steps[:top]],
        notes=reader.notes,
    )


def _round(value: float) -> float:
    """A float rounded as every persisted document rounds them (``schema.FLOAT_DIGITS``)."""
    if isinstance(value, float):
        rounded = round(value, FLOAT_DIGITS)
        return 0.0 if rounded == 0 else rounded  # no "-0.0"
    return value


def _points(versions: Sequence[_Version], metric: Metric) -> list[Point]:
    points: list[Point] = []
    prev: _Version | None = None
    for v in versions:
        value = v.doc.metrics.get(metric.name)
        if value is None:
            continue
        if prev is None:
            # model_construct: every field comes from validated versions, so skip validation
            # again (history builds one point per version and metric: thousands).
            points.append(Point.model_construct(commit=v.commit.hash, value=value))
        else:
            before = prev.doc.metrics[metric.name]
            delta = _round(value - before)
            points.append(Point.model_construct(
                commit=v.commit.hash, value=value, delta=delta,
                change=_round(delta / abs(before)) if before else None,
                # Every recorded fact that changed, the model's ones (capture mode, device) too.
                environment=fact_changes(
                    prev.doc.environment, v.doc.environment, unknown="unknown"
                ),
            ))
        prev = v
    return points


def _step_key(doc: VersionSummary, metric: Metric, p: Point,
              order: Mapping[str, int]) -> tuple[float, float, int, str, str]:
    """Largest relative change first (from zero: infinite), then the largest delta."""
    assert p.delta is not None
    size = math.inf if p.change is None else abs(p.change)
    return (-size, -abs(p.delta), order[p.commit], doc.test, metric.name)


def _step(doc: VersionSummary, metric: Metric, p: Point) -> Step:
    assert p.delta is not None
    after = p.value
    before = _round(after - p.delta)
    return Step(test=doc.test, name=doc.name, metric=metric.name, commit=p.commit,
                before=before, after=after, delta=p.delta, change=p.change,
                worse=metric.worse_by(after, before) > 0, environment=p.environment)


def read_history(
    paths: Sequence[Path],
    *,
    metrics: Sequence[str] | None = None,
    since: str | None = None,
    tests: Sequence[str] = (),
    top: int = 20,
) -> HistoryDocument:
    """The history of the baselines under ``paths`` (files or folders of one repository)."""
    picked = pick_metrics(metrics)
    repo = find_repo(paths)
    pathspecs = [repo.relative(p) or "." for p in paths]  # "": the top of the tree
    head = repo.resolve("HEAD")
    start: dict[str, str] = {}
    start_commit: Commit | None = None
    if since is not None:
        since_hash = repo.resolve(since)
        start = list_tree(repo, since_hash, pathspecs)
        (start_commit,) = commits(repo, "-1", since_hash)
    entries = read_log(repo, pathspecs, since=since)
    if not entries and not start:
        where = ", ".join(pathspecs)
        raise HistoryError(
            f"no committed baseline under {where} in {repo.root}"
            + (f" after {since}" if since else "")
            + ": commit the baseline folder first (pytest --modelprof-update-baselines writes "
            "it), or give the folder that holds the baselines")
    wanted = set(start.values()) | {c.blob for e in entries for c in e.changes
                                    if _is_baseline(c.path)}
    first = start_commit or (entries[0].commit if entries else None)
    coverage = Coverage(
        head=head, since=since, paths=pathspecs,
        commits_seen=len(entries) + (1 if start_commit else 0),
        first_commit=first.hash if first else None, first_date=first.date if first else None,
        shallow=repo.is_shallow(),
    )
    return build_history(entries, read_blobs(repo, wanted), picked, coverage=coverage,
                         start=start, start_commit=start_commit, tests=tests, top=top)
