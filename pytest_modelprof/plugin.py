"""The pytest plugin: options, the ``profile`` marker, the ``modelprof`` fixture and hooks.

Wiring only; the gate lives in :mod:`pytest_modelprof.gate`. At import time this module loads
only pytest, the standard library and the light settings/tolerance tables: a run that uses no
``profile`` marker and no ``modelprof`` fixture never imports torch (or pydantic).
"""

from __future__ import annotations

import json
import os
from collections.abc import Generator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from pytest_modelprof import hookspecs
from pytest_modelprof._options import add_options
from pytest_modelprof.errors import FormulaError, ModelprofError, SettingsError
from pytest_modelprof.gate.report_settings import REPORT_KEYS, resolve_reports
from pytest_modelprof.gate.settings import (
    LIMIT_NAMES,
    MARKER_SIGNATURE,
    MarkerSpec,
    ProfileRequest,
    SessionSettings,
    ini_key,
    resolve_marker,
    resolve_session,
)

if TYPE_CHECKING:
    from pytest_modelprof.costs.registry import CostRegistry
    from pytest_modelprof.gate.cache import ProfileCache
    from pytest_modelprof.gate.fixture import TestProfiles
    from pytest_modelprof.gate.record import GateRecord
    from pytest_modelprof.report.session import SessionReports
    from pytest_modelprof.schema import ModelProfile

__all__: list[str] = []

REPORT_ATTR = "modelprof_records"  # JSON string on the call-phase TestReport (xdist transport)
WORKER_OUTPUT_KEY = "modelprof_collected"


@dataclass
class _Session:
    settings: SessionSettings
    cache: ProfileCache | None = None
    records: list[GateRecord] = field(default_factory=list)
    expanded: dict[str, set[str]] = field(default_factory=dict)  # collector -> children
    completed: set[str] = field(default_factory=set)
    stale: list[Path] = field(default_factory=list)
    formulas: CostRegistry | None = None  # built-in + register_formula + the hook's, built once


@dataclass
class _Item:
    spec: MarkerSpec | None = None
    profiles: TestProfiles | None = None
    records: list[GateRecord] = field(default_factory=list)


SESSION_KEY = pytest.StashKey[_Session]()
ITEM_KEY = pytest.StashKey[_Item]()


# -- options -------------------------------------------------------------------------------------


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    pluginmanager.add_hookspecs(hookspecs)


def pytest_addoption(parser: pytest.Parser) -> None:
    add_options(parser)


# -- configure -----------------------------------------------------------------------------------


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        f"{MARKER_SIGNATURE}: profile the model (or, without model=, what the test passes to "
        "the modelprof fixture) and fail when it costs more than its committed baseline; "
        "*_delta limits are fractions of the baseline, max_flops/max_params/max_memory/"
        "max_latency_ms are absolute budgets.",
    )
    cli: dict[str, object] = {
        "update": config.option.modelprof_update,
        "strict": config.option.modelprof_strict,
        "prune": config.option.modelprof_prune,
        "baseline_dir": config.option.modelprof_baseline_dir,
        "env_strict": config.option.modelprof_env_strict,
        "disable": config.option.modelprof_disable,
    }
    ini: dict[str, object] = {
        "baseline_dir": config.getini("modelprof_baseline_dir"),
        "strict": config.getini("modelprof_strict") or None,
        "env_strict": config.getini("modelprof_env_strict") or None,
        "disable": config.getini("modelprof_disable") or None,
    }
    for key in LIMIT_NAMES:
        cli[key] = getattr(config.option, ini_key(key))
        ini[key] = config.getini(ini_key(key)) or None
    try:
        settings = resolve_session(
            cli,
            ini,
            rootdir=Path(config.rootpath),
            invocation_dir=Path(config.invocation_params.dir),
            ini_dir=Path(config.inipath).parent if config.inipath else None,
        )
    except SettingsError as exc:
        raise pytest.UsageError(f"pytest-modelprof: {exc}") from None
    config.stash[SESSION_KEY] = _Session(settings)
    config.pluginmanager.register(_Gatherer(config), "modelprof-gatherer")
    config.pluginmanager.register(_Formulas(config), "modelprof-formulas")
    _configure_reports(config)
    if config.pluginmanager.hasplugin("xdist"):
        config.pluginmanager.register(_XdistHooks(config), "modelprof-xdist")


def _configure_reports(config: pytest.Config) -> None:
    try:
        reports = resolve_reports(
            {k: getattr(config.option, ini_key(k)) for k in REPORT_KEYS},
            {k: config.getini(ini_key(k)) for k in REPORT_KEYS},
            invocation_dir=Path(config.invocation_params.dir),
            ini_dir=Path(config.inipath).parent if config.inipath else Path(config.rootpath),
        )
    except SettingsError as exc:
        raise pytest.UsageError(f"pytest-modelprof: {exc}") from None
    if not _is_worker(config) and reports.active(os.environ):
        from pytest_modelprof.report.session import SessionReports

        collector = SessionReports(reports, Path(config.rootpath))
        config.pluginmanager.register(_Reports(collector), "modelprof-reports")


def pytest_report_header(config: pytest.Config) -> str:
    return config.stash[SESSION_KEY].settings.header()


def _is_worker(config: pytest.Config) -> bool:
    return hasattr(config, "workerinput")


# -- the gate ------------------------------------------------------------------------------------


def _spec(item: pytest.Item) -> MarkerSpec:
    """The item's marker resolved over the session settings (once per item)."""
    state = item.stash.setdefault(ITEM_KEY, _Item())
    if state.spec is None:
        marker = item.get_closest_marker("profile")
        base = item.config.stash[SESSION_KEY].settings.limits
        args: tuple[object, ...] = marker.args if marker else ()
        kwargs: dict[str, Any] = dict(marker.kwargs) if marker else {}
        state.spec = resolve_marker(args, kwargs, base, where=item.nodeid)
    return state.spec


def _profiles(item: pytest.Item) -> TestProfiles:
    from pytest_modelprof.gate.fixture import TestProfiles

    state = item.stash.setdefault(ITEM_KEY, _Item())
    if state.profiles is None:
        state.profiles = TestProfiles()
    return state.profiles


def _profile(config: pytest.Config, request: ProfileRequest) -> ModelProfile:
    """Profile through the session cache, the ``pytest_modelprof_profile`` hook, then the engine."""
    from pytest_modelprof.gate.cache import ProfileCache, call_profile_model

    state = config.stash[SESSION_KEY]
    if state.cache is None:
        state.cache = ProfileCache()

    def run(req: ProfileRequest) -> ModelProfile:
        hook = config.hook.pytest_modelprof_profile
        result: ModelProfile | None = hook(config=config, request=req)
        return result if result is not None else call_profile_model(req)

    return state.cache.get_or_profile(request, run)


def _formulas(config: pytest.Config) -> CostRegistry:
    """The session's cost formulas: the hook ``pytest_modelprof_register_formulas`` adds to a
    copy of the built-in ones, on first use (so a run without profiles never imports torch)."""
    from pytest_modelprof.costs.user import session_registry

    state = config.stash[SESSION_KEY]
    if state.formulas is None:
        state.formulas = session_registry(
            lambda registry: config.hook.pytest_modelprof_register_formulas(
                config=config, registry=registry
            )
        )
    return state.formulas


@pytest.fixture
def modelprof(request: pytest.FixtureRequest) -> Any:
    """Profile a model, register it for this test's baseline gate and return the profile:
    ``modelprof(module_or_name, input_shape=..., inputs=..., name=None, dtype=None,
    mode="auto", include_backward=False, strict=False)``."""
    from pytest_modelprof.gate.fixture import ModelprofFixture

    item = request.node
    assert isinstance(item, pytest.Item)

    def defaults() -> tuple[Any, str | None, dict[str, Any]]:
        spec = _spec(item)
        shape = spec.input_shape if spec.request is None else None
        return shape, spec.device, dict(spec.capture)

    if item.config.stash[SESSION_KEY].settings.disable:
        from pytest_modelprof.profile import profile_model

        # Disabled: the fixture still returns a profile (tests may assert on it) but nothing
        # is registered for the gate and no baseline is read or written.
        return ModelprofFixture(
            None,
            lambda req: profile_model(
                req.model, registry=_formulas(item.config), **req.engine_kwargs()
            ),
            defaults,
        )
    return ModelprofFixture(
        _profiles(item), lambda req: _profile(item.config, req), defaults, _short_failure
    )


def _short_failure(message: str) -> None:
    """A failure without a traceback: the message already names the culprit and the fix."""
    __tracebackhide__ = True
    pytest.fail(message, pytrace=False)


def _uses_gate(item: pytest.Item) -> bool:
    if item.config.stash[SESSION_KEY].settings.disable:
        return False
    fixturenames = getattr(item, "fixturenames", ())
    return item.get_closest_marker("profile") is not None or "modelprof" in fixturenames


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, None, None]:
    if not _uses_gate(item):
        return (yield)
    problem: str | None = None
    try:
        spec = _spec(item)
    except SettingsError as exc:
        problem = str(exc)
    if problem is not None:  # outside the except block: one error, no chained traceback
        pytest.fail(problem, pytrace=False)
    result = yield  # the test body; if it failed, its exception propagates and no gate runs
    from pytest_modelprof.gate.collect import (
        measure_compile,
        measure_latency,
        run_fvcore,
        run_sweep,
    )
    from pytest_modelprof.gate.evaluate import evaluate, stored_timing

    config = item.config
    state = config.stash[SESSION_KEY]
    profiles = _profiles(item)
    try:
        if spec.request is not None:
            profiles.add(spec.name, spec.request, _profile(config, spec.request))
        if not profiles.entries:
            raise SettingsError(
                f"marker on {item.nodeid}: @pytest.mark.profile has no model= and the test did "
                "not call the modelprof fixture; pass model= or call modelprof(model, ...)"
            )
        failures: list[str] = []
        records = item.stash[ITEM_KEY].records
        for name, request, profile in profiles.entries:
            outcome = evaluate(
                profile,
                nodeid=item.nodeid,
                name=name,
                limits=spec.limits,
                session=state.settings,
                rootdir=Path(config.rootpath),
                timing=measure_latency(
                    request, spec.limits, stored_timing(item.nodeid, name, state.settings)
                ),
                sweep=run_sweep(request, spec.sweep, spec.limits),
                fvcore=run_fvcore(request, spec.limits),
                compile_health=measure_compile(request, spec.limits, spec.sweep),
            )
            records.append(outcome.record)
            if outcome.failure:
                failures.append(outcome.failure)
    except ModelprofError as exc:
        problem = f"modelprof: {exc}"
    if problem is not None:
        pytest.fail(problem, pytrace=False)
    if failures:
        pytest.fail("\n\n".join(failures), pytrace=False)
    return result


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    if call.when == "call":
        state = item.stash.get(ITEM_KEY, None)
        if state is not None and state.records:
            from pytest_modelprof.gate.record import records_to_json

            setattr(report, REPORT_ATTR, records_to_json(state.records))
    return report


class _Gatherer:
    """Collects records from call-phase reports; an object because the hook gets no config."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config

    @pytest.hookimpl
    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        """Remember what each module and class holds (before deselection), to spot stale
        baselines. Directory reports are left out: with path arguments they list only the
        matching entries, so a missing module there proves nothing."""
        if report.passed and (report.nodeid.endswith(".py") or "::" in report.nodeid):
            children = self.config.stash[SESSION_KEY].expanded.setdefault(report.nodeid, set())
            children.update(node.nodeid for node in report.result)

    @pytest.hookimpl
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.when != "call":
            return
        payload = getattr(report, REPORT_ATTR, None)
        state = self.config.stash[SESSION_KEY]
        if report.passed or payload is not None:
            state.completed.add(report.nodeid)  # the body ran to the end: its gate ran
        if payload is None:
            return
        from pytest_modelprof.gate.record import records_from_json

        for record in records_from_json(payload):
            state.records.append(record)
            if not _is_worker(self.config):
                self.config.hook.pytest_modelprof_record(config=self.config, record=record)


# -- end of session ------------------------------------------------------------------------------


def pytest_sessionfinish(session: pytest.Session) -> None:
    config = session.config
    state = config.stash.get(SESSION_KEY, None)
    if state is None:
        return
    if _is_worker(config):
        workeroutput: dict[str, Any] = config.workeroutput  # type: ignore[attr-defined]
        workeroutput[WORKER_OUTPUT_KEY] = json.dumps(
            {k: sorted(v) for k, v in sorted(state.expanded.items())}
        )
        return
    from pytest_modelprof.baseline.stale import find_stale, prune

    state.stale = find_stale(
        state.settings.baseline_dir,
        used={r.baseline_path for r in state.records},
        expanded=state.expanded,
        completed=state.completed,
        rootdir=Path(config.rootpath),
    )
    if state.settings.prune and state.stale:
        prune(state.settings.baseline_dir, state.stale)


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    state = config.stash.get(SESSION_KEY, None)
    if state is None or _is_worker(config) or not (state.records or state.stale):
        return
    from pytest_modelprof.gate.evaluate import update_command
    from pytest_modelprof.gate.summary import problem_lines, summary_lines

    tr = terminalreporter
    tr.write_sep("=", "modelprof")
    if state.records:
        for line in summary_lines(state.records):
            tr.write_line(line)
        for line in problem_lines(state.records):
            tr.write_line(line, red=line.lstrip().startswith("FAIL"),
                          yellow=line.lstrip().startswith("warn"))
    by_status: dict[str, list[str]] = {}
    for record in state.records:
        by_status.setdefault(record.status, []).append(record.nodeid)
    for status, verb in (("missing", "have no baseline"), ("improved", "improved")):
        ids = sorted(set(by_status.get(status, [])))
        if ids:
            tr.write_line(f"{len(ids)} test(s) {verb}; run: {update_command(ids)}", yellow=True)
    if state.stale:
        root = state.settings.baseline_dir
        rel = [p.relative_to(root).as_posix() for p in state.stale]
        if state.settings.prune:
            tr.write_line(f"removed {len(rel)} stale baseline(s) from {root}:", yellow=True)
        else:
            tr.write_line(
                f"{len(rel)} stale baseline(s) in {root} are used by no test "
                f"(remove them with --modelprof-prune-baselines):",
                yellow=True,
            )
        for path in rel:
            tr.write_line(f"  {path}")


class _Reports:
    """Registered on the controller when a report is asked for (or GitHub Actions is detected)."""

    def __init__(self, collector: SessionReports) -> None:
        self.collector = collector
        self.notes: list[str] = []
        self.annotations: list[str] = []
        self.error: str | None = None

    @pytest.hookimpl
    def pytest_modelprof_record(self, record: GateRecord) -> None:
        self.collector.add_record(record)

    @pytest.hookimpl
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.when == "call" and getattr(report, REPORT_ATTR, None) is not None:
            path, line, _ = report.location
            self.collector.add_location(report.nodeid, path, line)

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        try:
            self.notes, self.annotations = self.collector.finish(int(exitstatus))
        except (ModelprofError, OSError) as exc:
            self.error = f"modelprof: could not write the reports: {exc}"
            if session.exitstatus == pytest.ExitCode.OK:
                session.exitstatus = pytest.ExitCode.TESTS_FAILED

    @pytest.hookimpl(trylast=True)
    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        for line in self.notes:
            terminalreporter.write_line(line)
        if self.error:
            terminalreporter.write_line(self.error, red=True)
        for line in self.annotations:  # GitHub reads workflow commands from stdout
            terminalreporter.write_line(line)


class _Formulas:
    """Runs each gated test, its body and its gate, with the session's cost formulas; a
    wrapper of its own so that it encloses the gate's wrapper (``tryfirst``)."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_runtest_call(self, item: pytest.Item) -> Generator[None, None, None]:
        if not _uses_gate(item):
            return (yield)
        from pytest_modelprof.costs.user import using_registry

        problem: str | None = None
        try:
            formulas = _formulas(self.config)
        except FormulaError as exc:
            problem = f"modelprof: {exc}"
        if problem is not None:  # outside the except block: no chained traceback
            pytest.fail(problem, pytrace=False)
        with using_registry(formulas):
            return (yield)


class _XdistHooks:
    """Registered only when pytest-xdist is installed."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config

    @pytest.hookimpl
    def pytest_testnodedown(self, node: Any, error: object) -> None:
        payload = getattr(node, "workeroutput", {}).get(WORKER_OUTPUT_KEY)
        if payload:
            state = self.config.stash[SESSION_KEY]
            for collector, children in json.loads(payload).items():
                state.expanded.setdefault(collector, set()).update(children)

