"""The history's view model: every number formatted once, in the metric table's units, for
the text, Markdown and HTML renderers (which only lay it out)."""

from __future__ import annotations

from dataclasses import dataclass, replace

from pytest_modelprof._version import __version__
from pytest_modelprof.baseline.change import format_change
from pytest_modelprof.baseline.metrics import Metric, active_metrics
from pytest_modelprof.history.charts import series_chart
from pytest_modelprof.history.model import CommitRow, HistoryDocument, Point, Step, TestHistory
from pytest_modelprof.report.model import Chart, Fact
from pytest_modelprof.report.view import breakable
from pytest_modelprof.units import sign

__all__ = ["StepRow", "HistoryView", "build_history_view"]


@dataclass(frozen=True)
class StepRow:
    """One change between two versions: the commit, its figures and what else changed."""

    test: str
    metric: str
    short: str
    date: str
    subject: str
    before: str
    after: str
    delta: str
    change: str
    environment: str
    css: str  # "up" (worse), "down" (better) or "" (only the environment changed)
    test_parts: tuple[str, ...] = ()  # ``test`` cut where it may wrap (report.view.breakable)


@dataclass(frozen=True)
class TestSection:
    anchor: str
    test: str
    test_parts: tuple[str, ...]
    facts: tuple[Fact, ...]
    latest: tuple[tuple[str, str], ...]  # (metric label, newest value)
    charts: tuple[Chart, ...]
    steps: tuple[StepRow, ...]


@dataclass(frozen=True)
class HistoryView:
    title: str
    coverage: str
    facts: tuple[Fact, ...]
    largest: tuple[StepRow, ...]
    sections: tuple[TestSection, ...]
    notes: tuple[str, ...]
    generator: str = "pytest-modelprof"


def _metric(name: str) -> Metric:
    metric = active_metrics().by_name(name)
    assert metric is not None, name  # the document was built from the table
    return metric


def signed(metric: Metric, delta: float) -> str:
    """``+1.2 MFLOPs`` or ``-300 KB`` in the metric's unit."""
    return sign(delta) + metric.format(abs(delta))


def change_of(before: float, change: float | None) -> str:
    return "from zero" if change is None and before == 0 else format_change(change)


def test_label(test: str, name: str | None) -> str:
    return f"{test} @ {name}" if name else test


def coverage_line(doc: HistoryDocument) -> str:
    """How much history was read: ``14 commits changed a baseline, from 2f3a… (2026-11-01)``."""
    cov = doc.coverage
    n = cov.commits_seen
    text = f"{n} commit{'s' if n != 1 else ''} changed a baseline under {', '.join(cov.paths)}"
    if cov.first_commit:
        text += f", from {cov.first_commit[:8]} ({(cov.first_date or '')[:10]})"
    text += f" to {cov.head[:8]}"
    if cov.since:
        text += f" (since {cov.since})"
    if cov.shallow:
        text += (". Shallow clone: only the history fetched was seen; earlier versions are "
                 "missing (git fetch --unshallow, or fetch-depth: 0 in actions/checkout)")
    return text + "."


def _row(test: str, metric: Metric, point: Point, commit: CommitRow) -> StepRow:
    delta = point.delta or 0
    before = point.value - delta
    worse = metric.worse_by(point.value, before) > 0
    return StepRow(
        test=test, metric=metric.label, short=commit.short, date=commit.date[:10],
        subject=commit.subject,
        before=metric.format(before), after=metric.format(point.value),
        delta=signed(metric, delta) if delta else "0",
        change=change_of(before, point.change) if delta else "",
        environment="; ".join(point.environment),
        css=("up" if worse else "down") if delta else "", test_parts=breakable(test),
    )


def _step_row(step: Step, commits: dict[str, CommitRow]) -> StepRow:
    metric = _metric(step.metric)
    point = Point(commit=step.commit, value=step.after, delta=step.delta, change=step.change,
                  environment=step.environment)
    return _row(test_label(step.test, step.name), metric, point, commits[step.commit])


def _section(i: int, test: TestHistory, doc: HistoryDocument,
             commits: dict[str, CommitRow]) -> TestSection:
    facts = [Fact("model", test.model), Fact("baseline", test.path),
             Fact("versions", str(test.versions))]
    if test.renamed_from:
        facts.append(Fact("renamed from", ", ".join(test.renamed_from)))
    if test.removed_in:
        commit = commits[test.removed_in]
        facts.append(Fact("removed in", f"{commit.short} ({commit.date[:10]}) {commit.subject}"))
    order = {c.hash: k for k, c in enumerate(doc.commits)}
    keyed: list[tuple[int, int, StepRow]] = []
    env_only: list[Point] = []
    latest = []
    charts = []
    label = test_label(test.test, test.name)
    for m, series in enumerate(test.series):
        metric = _metric(series.metric)
        latest.append((metric.label, metric.format(series.points[-1].value)))
        charts.append(series_chart(series, metric, doc.commits, commits))
        keyed += [(order[p.commit], m, _row(label, metric, p, commits[p.commit]))
                  for p in series.points[1:] if p.delta]
        env_only += [p for p in series.points[1:] if p.environment and not p.delta]
    # An environment change that moved no metric is one row, not one per metric.
    moved = {k for k, _, _ in keyed}
    for p in env_only:
        if order[p.commit] not in moved:
            moved.add(order[p.commit])
            row = _row(label, _metric(test.series[0].metric), p, commits[p.commit])
            keyed.append((order[p.commit], -1, replace(row, metric="(none moved)", before="",
                                                          after="", delta="")))
    keyed.sort(key=lambda k: k[:2])
    return TestSection(anchor=f"test-{i}", test=label, test_parts=breakable(label),
                       facts=tuple(facts), latest=tuple(latest), charts=tuple(charts),
                       steps=tuple(r for _, _, r in keyed))


def build_history_view(doc: HistoryDocument, *, title: str = "Cost history") -> HistoryView:
    """Format the document once for every renderer."""
    commits = {c.hash: c for c in doc.commits}
    facts = (
        Fact("head", doc.coverage.head[:8]),
        Fact("baselines", ", ".join(doc.coverage.paths)),
        Fact("tests", str(len(doc.tests))),
        # The metrics some version recorded (subgraphs only where a fusion limit measured them).
        Fact("metrics", ", ".join(_metric(m).label for m in doc.metrics
                                  if any(s.metric == m for t in doc.tests for s in t.series))),
    )
    return HistoryView(
        title=title, coverage=coverage_line(doc), facts=facts,
        largest=tuple(_step_row(s, commits) for s in doc.largest_steps),
        sections=tuple(_section(i, t, doc, commits) for i, t in enumerate(doc.tests)),
        notes=tuple(doc.notes), generator=f"pytest-modelprof {__version__}",
    )
