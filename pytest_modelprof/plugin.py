"""The pytest plugin: options, the ``profile`` marker, the ``modelprof`` fixture and hooks.

Wiring only; the gate lives in :mod:`pytest_modelprof.gate`. At import time this module loads
only pytest, the standard library and the light settings/tolerance tables: a run that uses no
``profile`` marker and no ``modelprof`` fixture never imports torch (or pydantic).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Generator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from pytest_modelprof import hookspecs
from pytest_modelprof._options import add_options, option_values
from pytest_modelprof._plugin_parts import (
    ITEM_KEY,
    JUDGED_ATTR,
    REPORT_ATTR,
    SESSION_KEY,
    WORKER_OUTPUT_KEY,
    Formulas,
    Gatherer,
    ItemState,
    Reports,
    SessionState,
    XdistHooks,
    error_row,
    is_worker,
    session_collectors,
    session_formulas,
    session_metrics,
    uses_gate,
)
from pytest_modelprof.baseline.metrics import use_metrics
from pytest_modelprof.baseline.stale import RunCoverage, prune, stored_inputs, survey
from pytest_modelprof.baseline.store import BaselinePaths
from pytest_modelprof.ci import AUTO, on_github_actions
from pytest_modelprof.errors import ModelprofError, SettingsError
from pytest_modelprof.gate.cache import ProfileCache, call_profile_model
from pytest_modelprof.gate.fixture import Modelprof, TestProfiles
from pytest_modelprof.gate.marker import MARKER_SIGNATURE, MarkerSpec, resolve_marker
from pytest_modelprof.gate.report_settings import REPORT_KEYS, resolve_reports
from pytest_modelprof.gate.request import ProfileRequest
from pytest_modelprof.gate.settings import ini_key, resolve_session
from pytest_modelprof.instructions import InstructionsUnavailable
from pytest_modelprof.report.session import SessionReports
from pytest_modelprof.textfit import fit_line, fit_text

if TYPE_CHECKING:
    from pytest_modelprof.results.record import ProfileResult
    from pytest_modelprof.schema import ModelProfile

__all__: list[str] = []

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
        "max_<metric>_delta limits are fractions of the baseline, max_<metric> absolute budgets, "
        "max_<metric>_growth a sweep's growth exponents.",
    )
    cli, ini = option_values(config)
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
    config.stash[SESSION_KEY] = SessionState(settings)
    session_metrics(config)  # a bad pytest_modelprof_register_metrics hook stops the run here
    if not settings.disable:  # a disabled gate proves nothing about baselines: never prune
        config.stash[SESSION_KEY].coverage = RunCoverage()
    config.pluginmanager.register(Gatherer(config), "modelprof-gatherer")
    config.pluginmanager.register(Formulas(config), "modelprof-formulas")
    _configure_reports(config)
    _configure_timing_base(config, settings.update or settings.disable)
    if config.pluginmanager.hasplugin("xdist"):
        config.pluginmanager.register(XdistHooks(config), "modelprof-xdist")


def _configure_timing_base(config: pytest.Config, off: bool) -> None:
    ref = config.option.modelprof_timing_base or AUTO
    if ref == AUTO and not on_github_actions(os.environ):
        return  # the default outside GitHub Actions: off, and nothing imported for it
    if not off and ref != "off":
        from pytest_modelprof.history.paired import session_base

        close = session_base(ref, Path(config.rootpath), os.environ)
        if close is not None:
            config.add_cleanup(close)


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
    if not is_worker(config) and reports.active(os.environ):
        collector = SessionReports(reports, Path(config.rootpath))
        config.pluginmanager.register(Reports(collector), "modelprof-reports")


def pytest_report_header(config: pytest.Config) -> list[str]:
    return fit_line(config.stash[SESSION_KEY].settings.header(), _terminal_width(config))


# -- the gate ------------------------------------------------------------------------------------


def _spec(item: pytest.Item) -> MarkerSpec:
    """The item's marker resolved over the session settings (once per item)."""
    state = item.stash.setdefault(ITEM_KEY, ItemState())
    if state.spec is None:
        marker = item.get_closest_marker("profile")
        base = item.config.stash[SESSION_KEY].settings.limits
        args: tuple[object, ...] = marker.args if marker else ()
        kwargs: dict[str, Any] = dict(marker.kwargs) if marker else {}
        state.spec = resolve_marker(args, kwargs, base, where=item.nodeid)
    return state.spec


def _profiles(item: pytest.Item) -> TestProfiles:
    state = item.stash.setdefault(ITEM_KEY, ItemState())
    if state.profiles is None:
        state.profiles = TestProfiles()
    return state.profiles


def _profile(config: pytest.Config, request: ProfileRequest) -> ModelProfile:
    """Profile through the session cache, the ``pytest_modelprof_profile`` hook, then the engine."""
    state = config.stash[SESSION_KEY]
    if state.cache is None:
        state.cache = ProfileCache()

    def run(req: ProfileRequest) -> ModelProfile:
        hook = config.hook.pytest_modelprof_profile
        result: ModelProfile | None = hook(config=config, request=req)
        return result if result is not None else call_profile_model(req)

    return state.cache.get_or_profile(request, run)


@pytest.fixture
def modelprof(request: pytest.FixtureRequest) -> Modelprof:
    """Profile a model, register it for this test's baseline gate and return the profile:
    ``modelprof(module_or_name, input_shape=..., inputs=..., name=None, dtype=None,
    mode="auto", include_backward=False, fail_on_uncounted=False)``."""
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
        return Modelprof(
            None,
            lambda req: profile_model(
                req.model, registry=session_formulas(item.config), **req.engine_kwargs()
            ),
            defaults,
        )
    return Modelprof(
        _profiles(item),
        lambda req: _profile(item.config, req),
        defaults,
        lambda message: _short_failure(item, message),
    )


@pytest.hookimpl(tryfirst=True)  # before -k, -m and --deselect drop items
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    state = config.stash.get(SESSION_KEY, None)
    if state is not None and not state.settings.disable:
        # Tests whose usual baseline paths meet get paths apart: the collection says which.
        state.paths = BaselinePaths(state.settings.baseline_dir, [i.nodeid for i in items])


def _terminal_width(config: pytest.Config) -> int:
    """The width pytest writes to (``COLUMNS``, the tty, else 80)."""
    try:
        return int(config.get_terminal_writer().fullwidth)
    except (AssertionError, AttributeError):  # no terminal reporter (-p no:terminal, workers)
        import shutil

        return shutil.get_terminal_size(fallback=(80, 24)).columns


def _short_failure(item: pytest.Item, message: str) -> None:
    """A failure without a traceback: the message already names the culprit and the fix.
    The terminal gets it fitted to its width; the reports get it as written."""
    __tracebackhide__ = True

    item.stash.setdefault(ITEM_KEY, ItemState()).message = message
    pytest.fail(fit_text(message, _terminal_width(item.config)), pytrace=False)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item) -> Generator[None, object, object]:
    # The session's metric set, for this test only (its marker, fixture, collectors, judge).
    state = item.config.stash.get(SESSION_KEY, None)
    if state is None or state.metrics is None:
        return (yield)
    with use_metrics(state.metrics):
        return (yield)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, None, None]:
    if not uses_gate(item):
        return (yield)
    problem: str | None = None
    try:
        spec = _spec(item)
    except SettingsError as exc:
        problem = str(exc)
    if problem is not None:  # outside the except block: one error, no chained traceback
        _short_failure(item, problem)
    result = yield  # the test body; if it failed, its exception propagates and no gate runs

    state = item.config.stash[SESSION_KEY]
    profiles = _profiles(item)
    try:
        if not _has_profiles(item, spec, profiles):
            item.stash[ITEM_KEY].judged = True
            return result  # the fixture was requested but never called: nothing to judge
        failures = _judge_profiles(item, spec, profiles)
        item.stash[ITEM_KEY].judged = True
    except InstructionsUnavailable as exc:
        if state.settings.instructions == "skip":  # --modelprof-instructions=skip
            pytest.skip(f"modelprof: {exc}")
        problem = f"modelprof: {exc} (or skip such tests: --modelprof-instructions=skip)"
    except ModelprofError as exc:
        problem = f"modelprof: {exc}"
    if problem is not None:
        _short_failure(item, problem)
    if failures:
        _short_failure(item, "\n\n".join(failures))
    return result


def _judge_profiles(item: pytest.Item, spec: MarkerSpec, profiles: TestProfiles) -> list[str]:
    """Collect and judge each profile of the test; its records go to the item, failures back."""
    from pytest_modelprof.gate.evaluate import gate_profile

    config = item.config
    state = config.stash[SESSION_KEY]
    failures: list[str] = []
    for name, request, profile in profiles.entries:
        profiles.current = request
        outcome = gate_profile(
            profile, request, nodeid=item.nodeid, name=name, limits=spec.limits,
            sweep=spec.sweep, session=state.settings, rootdir=Path(config.rootpath),
            paths=state.paths, collectors=session_collectors(config),
        )
        item.stash[ITEM_KEY].records.append(outcome.record)
        if outcome.failure:
            failures.append(outcome.failure)
    return failures


def _has_profiles(item: pytest.Item, spec: MarkerSpec, profiles: TestProfiles) -> bool:
    """Profile the marker's model (if it names one); whether there is anything to judge."""
    if spec.request is not None:
        profiles.current = spec.request
        profiles.add(spec.name, spec.request, _profile(item.config, spec.request))
    if not profiles.entries and item.get_closest_marker("profile") is None:
        return False
    if not profiles.entries:
        raise SettingsError(
            f"marker on {item.nodeid}: @pytest.mark.profile has no model= and the test did "
            "not call the modelprof fixture; pass model= or call modelprof(model, ...)"
        )
    return True


def pytest_unconfigure(config: pytest.Config) -> None:
    # The session's valgrind process, if a test started one (without importing the client).
    client = sys.modules.get("pytest_modelprof.instructions.client")
    if client is not None:
        client.close_shared()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    # The records ride on the call report, or on the setup report when setup failed.
    if call.when == "call" or (call.when == "setup" and report.failed):
        state = item.stash.get(ITEM_KEY, None)
        if report.failed and uses_gate(item):
            # A red test is never missing from the reports: when no record explains the
            # failure (the gate never judged it), it becomes an error row with its message.
            state = item.stash.setdefault(ITEM_KEY, ItemState())
            if not any(r.failed for r in state.records):
                state.records.append(error_row(item, call, report))
        if state is not None and state.records:
            from pytest_modelprof.results.record import records_to_json

            setattr(report, REPORT_ATTR, records_to_json(state.records))
        if state is not None and state.judged:
            setattr(report, JUDGED_ATTR, True)
    return report


# -- end of session ------------------------------------------------------------------------------


def pytest_sessionfinish(session: pytest.Session) -> None:
    config = session.config
    state = config.stash.get(SESSION_KEY, None)
    if state is None:
        return
    coverage = state.coverage
    if coverage is None or config.option.collectonly:
        return  # disabled, or nothing ran: no listing, no pruning
    if is_worker(config):
        workeroutput: dict[str, Any] = config.workeroutput  # type: ignore[attr-defined]
        workeroutput[WORKER_OUTPUT_KEY] = coverage.worker_json()
        return

    why = coverage.incomplete("--lf" if getattr(config.option, "lf", False) else None)
    if why is not None:
        if state.settings.prune:  # asked to prune: say why nothing was
            state.stale_unchecked = why
        return
    found = survey(
        state.settings.baseline_dir,
        used={r.baseline_path for r in state.records},
        expanded=coverage.expanded,
        completed=coverage.completed,
        rootdir=Path(config.rootpath),
    )
    state.stale, state.not_generated = found.stale, found.not_generated
    if state.settings.prune and state.stale:
        prune(state.settings.baseline_dir, state.stale)


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    state = config.stash.get(SESSION_KEY, None)
    if state is None or is_worker(config):
        return
    kept = state.settings.prune and state.not_generated
    if not (state.records or state.stale or state.stale_unchecked or kept):
        return
    from pytest_modelprof.report.summary import problem_lines, summary_lines

    tr = terminalreporter
    width = _terminal_width(config)

    def write(line: str, **markup: bool) -> None:
        for part in fit_line(line, width):
            tr.write_line(part, **markup)

    tr.write_sep("=", "modelprof")
    # Failed limits are printed under FAILURES; here only where pytest printed no traceback.
    failures = getattr(config.option, "tbstyle", "auto") in ("no", "line")
    if state.records:
        for line in summary_lines(state.records, width):
            tr.write_line(line)
        for line in problem_lines(state.records, width, failures=failures):
            tr.write_line(line, red=line.lstrip().startswith("FAIL"),
                          yellow=line.lstrip().startswith("warn"))
    _baseline_hints(state, config, write)


def _baseline_hints(state: SessionState, config: pytest.Config, write: Callable[..., None]) -> None:
    """What to run for missing and improved baselines, renames, stale files."""
    from pytest_modelprof.gate.evaluate import update_command

    root = state.settings.baseline_dir
    renames = _renames(state, config) if not state.settings.prune else []
    moved = {record.nodeid for record, _ in renames}
    by_status: dict[str, list[str]] = {}
    for record in state.records:
        by_status.setdefault(record.status, []).append(record.nodeid)
    for status, verb in (("missing", "have no baseline"), ("improved", "improved")):
        ids = sorted(set(by_status.get(status, [])) - moved)
        if ids:
            write(f"{len(ids)} test(s) {verb}; run: {update_command(ids)}", yellow=True)
    for record, old in renames:
        write(
            f"{record.label} has no baseline, and the stale {old} holds the same model and "
            f"inputs: renamed? keep the comparison with: git mv {_shown(root / old, config)} "
            f"{_shown(root / record.baseline_path, config)}",
            yellow=True,
        )
    if state.stale_unchecked:
        write(f"stale baselines not checked, nothing removed: {state.stale_unchecked}",
              yellow=True)
    _stale_hints(state, {old for _, old in renames}, write)


def _stale_hints(state: SessionState, kept: set[str], write: Callable[..., None]) -> None:
    """The stale baselines (less those a rename explains), removed or to remove."""
    root = state.settings.baseline_dir
    rel = [p.relative_to(root).as_posix() for p in state.stale]
    rel = [r for r in rel if r not in kept]
    if state.settings.prune and state.not_generated:  # a plain run has nothing to say of them
        write(
            f"kept {len(state.not_generated)} baseline(s) in {root} whose test exists but whose "
            "parameters were not generated in this run:",
            yellow=True,
        )
        for kept_path in state.not_generated:
            write(f"  {kept_path.relative_to(root).as_posix()}")
        write(
            "  (a machine that generates them may need them; delete one by hand if its "
            "parameter is gone for good)"
        )
    if rel:
        if state.settings.prune:
            write(f"removed {len(rel)} stale baseline(s) from {root}:", yellow=True)
        else:
            write(
                f"{len(rel)} stale baseline(s) in {root} are used by no test "
                f"(remove them with --modelprof-prune-baselines):",
                yellow=True,
            )
        for path in rel:
            write(f"  {path}")


def _shown(path: Path, config: pytest.Config) -> str:
    try:
        return path.relative_to(Path(config.invocation_params.dir)).as_posix()
    except ValueError:
        return str(path)


def _renames(state: SessionState, config: pytest.Config) -> list[tuple[ProfileResult, str]]:
    """Tests without a baseline whose model and inputs a stale baseline holds (a rename)."""
    if not state.stale or not any(r.status == "missing" for r in state.records):
        return []
    from pytest_modelprof.gate.renames import inputs_identity, renamed

    root = state.settings.baseline_dir
    identities = {}
    for path in state.stale:
        stored = stored_inputs(path)
        if stored is not None:
            identities[path.relative_to(root).as_posix()] = inputs_identity(*stored)
    return renamed(state.records, identities)
