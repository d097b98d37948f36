"""The plugin's state and the hook objects it registers (wiring only, like :mod:`.plugin`).

Split from :mod:`pytest_modelprof.plugin` to keep each module readable: the session and item
state under their stash keys, the record gatherer (with stale-baseline coverage), the report
writer, the session's cost formulas and the xdist hooks. Loads no torch at import time.
"""

from __future__ import annotations

from collections.abc import Generator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from pytest_modelprof.baseline.metrics import BUILTIN_METRICS, Metric, use_metrics
from pytest_modelprof.baseline.store import BaselinePaths
from pytest_modelprof.costs.user import session_registry, using_registry
from pytest_modelprof.errors import ModelprofError
from pytest_modelprof.gate.marker import MarkerSpec
from pytest_modelprof.gate.settings import SessionSettings
from pytest_modelprof.textfit import fit_line

if TYPE_CHECKING:
    from pytest_modelprof.baseline.collector import Collector
    from pytest_modelprof.baseline.metrics import MetricTable
    from pytest_modelprof.baseline.stale import RunCoverage
    from pytest_modelprof.costs.registry import CostRegistry
    from pytest_modelprof.gate.cache import ProfileCache
    from pytest_modelprof.gate.fixture import TestProfiles
    from pytest_modelprof.report.session import SessionReports
    from pytest_modelprof.results.record import ProfileResult

__all__: list[str] = []

REPORT_ATTR = "modelprof_records"  # JSON string on the call-phase TestReport (xdist transport)
JUDGED_ATTR = "modelprof_judged"  # True on the call report when the gate judged every profile
WORKER_OUTPUT_KEY = "modelprof_collected"


@dataclass
class SessionState:
    settings: SessionSettings
    cache: ProfileCache | None = None
    records: list[ProfileResult] = field(default_factory=list)
    coverage: RunCoverage | None = None  # what the run looked at (None: the gate is disabled)
    stale: list[Path] = field(default_factory=list)
    not_generated: list[Path] = field(default_factory=list)  # unused, but their test exists
    paths: BaselinePaths | None = None  # where each collected test's baselines are
    formulas: CostRegistry | None = None  # built-in + register_formula + the hook's, built once
    stale_unchecked: str | None = None  # why stale detection could not prove anything
    metrics: MetricTable | None = None  # built-in + the register_metrics hook's, for this session
    # The register_collectors hook's collectors, and with the built-in ones (built on first use).
    registered: tuple[Collector[Any], ...] = ()
    collectors: Mapping[str, Collector[Any]] | None = None


@dataclass
class ItemState:
    spec: MarkerSpec | None = None
    profiles: TestProfiles | None = None
    records: list[ProfileResult] = field(default_factory=list)
    judged: bool = False  # the gate judged every profile (it may still have failed the test)
    message: str | None = None  # our failure as written, before it was fitted to the terminal


SESSION_KEY = pytest.StashKey[SessionState]()
ITEM_KEY = pytest.StashKey[ItemState]()


def is_worker(config: pytest.Config) -> bool:
    return hasattr(config, "workerinput")


def uses_gate(item: pytest.Item) -> bool:
    if item.config.stash[SESSION_KEY].settings.disable:
        return False
    fixturenames = getattr(item, "fixturenames", ())
    return item.get_closest_marker("profile") is not None or "modelprof" in fixturenames


def session_formulas(config: pytest.Config) -> CostRegistry:
    """The session's cost formulas: the hook ``pytest_modelprof_register_formulas`` adds to a
    copy of the built-in ones, on first use (so a run without profiles never imports torch)."""
    state = config.stash[SESSION_KEY]
    if state.formulas is None:
        state.formulas = session_registry(
            lambda registry: config.hook.pytest_modelprof_register_formulas(
                config=config, registry=registry
            )
        )
    return state.formulas


def session_metrics(config: pytest.Config) -> MetricTable:
    """This session's metric set: the built-in metrics plus what the
    ``pytest_modelprof_register_metrics`` hook returned (built on first use, at configure).

    Each collector key a metric names must be a built-in collector's or one the
    ``pytest_modelprof_register_collectors`` hook returned."""
    state = config.stash[SESSION_KEY]
    if state.metrics is None:
        added: list[Metric] = []
        for result in config.hook.pytest_modelprof_register_metrics(config=config):
            found = [result] if isinstance(result, Metric) else list(result or ())
            wrong = [m for m in found if not isinstance(m, Metric)]
            if wrong:
                raise pytest.UsageError(
                    f"pytest-modelprof: pytest_modelprof_register_metrics returned {wrong[0]!r}; "
                    "return a list of pytest_modelprof.baseline.metrics.Metric"
                )
            added += found
        try:
            table = BUILTIN_METRICS.with_metrics(*added)
        except ValueError as exc:
            raise pytest.UsageError(
                f"pytest-modelprof: pytest_modelprof_register_metrics: {exc}"
            ) from None
        state.registered = _registered_collectors(config, frozenset(BUILTIN_METRICS.collectors()))
        known = {*BUILTIN_METRICS.collectors(), *(c.name for c in state.registered)}
        for metric in added:
            if metric.collector is not None and metric.collector not in known:
                raise pytest.UsageError(
                    f"pytest-modelprof: metric {metric.name!r} names the collector "
                    f"{metric.collector!r}, which no pytest_modelprof_register_collectors hook "
                    f"returned; return the collector there (known: {', '.join(sorted(known))})"
                )
        state.metrics = table
    return state.metrics


def _registered_collectors(
    config: pytest.Config, builtin: frozenset[str]
) -> tuple[Collector[Any], ...]:
    """What the ``pytest_modelprof_register_collectors`` hooks returned (one name each)."""
    out: list[Collector[Any]] = []
    for result in config.hook.pytest_modelprof_register_collectors(config=config):
        out += list(result or ())
    names = [getattr(c, "name", None) for c in out]
    for name in names:
        if not isinstance(name, str):
            raise pytest.UsageError(
                "pytest-modelprof: pytest_modelprof_register_collectors returned an object "
                "without a name; return collectors (pytest_modelprof.baseline.collector)"
            )
        if name in builtin or names.count(name) > 1:
            raise pytest.UsageError(
                f"pytest-modelprof: pytest_modelprof_register_collectors: a collector called "
                f"{name!r} is already registered; give yours another name"
            )
    return tuple(out)


def session_collectors(config: pytest.Config) -> Mapping[str, Collector[Any]]:
    """This session's collectors by key: the built-in ones (imported from the packages that own
    them, on first use) plus the ``pytest_modelprof_register_collectors`` hook's."""
    from pytest_modelprof.gate.collect import BUILTIN_COLLECTORS

    state = config.stash[SESSION_KEY]
    if state.collectors is None:
        session_metrics(config)
        state.collectors = {**BUILTIN_COLLECTORS, **{c.name: c for c in state.registered}}
    return state.collectors


def error_row(
    item: pytest.Item, call: pytest.CallInfo[None], report: pytest.TestReport
) -> ProfileResult:
    """The error row of a gated test that failed before its gate judged it."""
    from pytest_modelprof.results.record import error_record

    excinfo = call.excinfo
    if excinfo is None:  # failed without an exception (a strict xfail that passed)
        message = report.longreprtext.strip() or "failed"
    elif isinstance(excinfo.value, pytest.fail.Exception):
        # Our short failures, as written (the terminal got them fitted to its width).
        state = item.stash.get(ITEM_KEY, None)
        message = (state and state.message) or excinfo.value.msg or excinfo.exconly()
    else:  # the line pytest's short summary shows; the traceback stays in the terminal
        message = excinfo.exconly(tryshort=True).splitlines()[0]
    state = item.stash.get(ITEM_KEY, None)
    current = state.profiles.current if state is not None and state.profiles else None
    marker = item.get_closest_marker("profile")  # raw: it may be the marker that failed
    kwargs = dict(marker.kwargs) if marker else {}
    model = marker.args[0] if marker and marker.args else kwargs.get("model")
    name = kwargs.get("name") if isinstance(kwargs.get("name"), str) else None
    if current is not None:
        name, model = current.name, current.model
    # The file this profile uses, so a test that failed early never makes it look stale.
    try:
        session = item.config.stash[SESSION_KEY]
        paths = session.paths or BaselinePaths(session.settings.baseline_dir)
        path = paths.relpath(item.nodeid, name).as_posix()
    except ModelprofError:
        path = ""
    return error_record(item.nodeid, message, name=name, model=model, baseline_path=path)


class Gatherer:
    """Collects records from call-phase reports; an object because the hook gets no config."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config

    @pytest.hookimpl
    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        """Remember what each module and class holds (before deselection), to spot stale
        baselines. Directory reports are left out: with path arguments they list only the
        matching entries, so a missing module there proves nothing."""
        coverage = self.config.stash[SESSION_KEY].coverage
        if coverage is None:
            return
        if report.failed:
            coverage.collect_errors += 1
        elif report.passed and (report.nodeid.endswith(".py") or "::" in report.nodeid):
            children = coverage.expanded.setdefault(report.nodeid, set())
            children.update(node.nodeid for node in report.result)

    @pytest.hookimpl
    def pytest_deselected(self, items: list[pytest.Item]) -> None:
        coverage = self.config.stash[SESSION_KEY].coverage
        if coverage is not None:
            coverage.deselected += len(items)

    @pytest.hookimpl
    def pytest_collection_finish(self, session: pytest.Session) -> None:
        coverage = self.config.stash[SESSION_KEY].coverage
        if coverage is not None:
            coverage.selected.update(item.nodeid for item in session.items)

    @pytest.hookimpl
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        state = self.config.stash[SESSION_KEY]
        if state.coverage is not None:
            state.coverage.ran.add(report.nodeid)
        payload = getattr(report, REPORT_ATTR, None)  # error rows travel on setup reports too
        if (
            report.when == "call"
            and state.coverage is not None
            and (report.passed or getattr(report, JUDGED_ATTR, False))
        ):
            state.coverage.completed.add(report.nodeid)  # ran to the end, its gate included
        if payload is None:
            return
        from pytest_modelprof.results.record import records_from_json

        for record in records_from_json(payload):
            state.records.append(record)
            if not is_worker(self.config):
                self.config.hook.pytest_modelprof_record(config=self.config, record=record)


class Reports:
    """Registered on the controller when a report is asked for (or GitHub Actions is detected)."""

    def __init__(self, collector: SessionReports) -> None:
        self.collector = collector
        self.notes: list[str] = []
        self.annotations: list[str] = []
        self.error: str | None = None

    @pytest.hookimpl
    def pytest_modelprof_record(self, record: ProfileResult) -> None:
        self.collector.add_record(record)

    @pytest.hookimpl
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if getattr(report, REPORT_ATTR, None) is not None:
            path, line, _ = report.location
            self.collector.add_location(report.nodeid, path, line)

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        try:
            with use_metrics(session_metrics(session.config)):  # the session's metric labels
                self.notes, self.annotations = self.collector.finish(int(exitstatus))
        except (ModelprofError, OSError) as exc:
            self.error = f"modelprof: could not write the reports: {exc}"
            if session.exitstatus == pytest.ExitCode.OK:
                session.exitstatus = pytest.ExitCode.TESTS_FAILED

    @pytest.hookimpl(trylast=True)
    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        width = int(terminalreporter.config.get_terminal_writer().fullwidth)
        for line in self.notes:
            for part in fit_line(line, width):
                terminalreporter.write_line(part)
        if self.error:
            for part in fit_line(self.error, width):
                terminalreporter.write_line(part, red=True)
        for line in self.annotations:  # GitHub reads workflow commands from stdout
            terminalreporter.write_line(line)


class Formulas:
    """Runs each gated test, its body and its gate, with the session's cost formulas; a
    wrapper of its own so that it encloses the gate's wrapper (``tryfirst``)."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_runtest_call(self, item: pytest.Item) -> Generator[None, None, None]:
        if not uses_gate(item):
            return (yield)

        # Built on the first profile of the session, not here: a gated test that never
        # profiles (a cached profile, another engine) imports no torch for it.
        with using_registry(lambda: session_formulas(self.config)):
            return (yield)


class XdistHooks:
    """Registered only when pytest-xdist is installed."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config

    @pytest.hookimpl
    def pytest_testnodeready(self, node: Any) -> None:
        coverage = self.config.stash[SESSION_KEY].coverage
        if coverage is not None:
            coverage.workers_started += 1

    @pytest.hookimpl
    def pytest_testnodedown(self, node: Any, error: object) -> None:
        coverage = self.config.stash[SESSION_KEY].coverage
        payload = getattr(node, "workeroutput", {}).get(WORKER_OUTPUT_KEY)
        if coverage is not None and payload and error is None:
            coverage.merge_worker_json(payload)
            coverage.workers_reported += 1
