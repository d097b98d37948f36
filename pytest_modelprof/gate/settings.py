"""Gate settings, resolved once into frozen values. Precedence: marker > CLI > ini > built-in.

:func:`resolve_session` turns the CLI and ini values into :class:`SessionSettings` at configure
time; :func:`resolve_marker` layers one test's ``@pytest.mark.profile`` on top. A limit is
written ``NAME=VALUE`` everywhere: a marker keyword, ``--modelprof-limit`` (repeatable), a line of
the ``modelprof_limits`` ini list, ``modelprof compare --limit``. Every error is a
:class:`~pytest_modelprof.errors.SettingsError` that names where the bad value came from
(``--modelprof-limit``, ``ini modelprof_limits``, ``marker on <nodeid>``).

Standard library only (plus the light tolerance and metric tables): the plugin calls this at
start-up in every run, so it must not import pydantic or torch.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from pytest_modelprof.baseline.compare import Policy
from pytest_modelprof.baseline.metrics import BUILTIN_METRICS, active_metrics
from pytest_modelprof.baseline.tolerance import (
    Budget,
    Ignore,
    Relative,
    Tolerance,
    format_tolerance,
    is_off,
    parse_budget,
    parse_tolerance,
    shown,
)
from pytest_modelprof.errors import SettingsError, did_you_mean
from pytest_modelprof.fit.options import STEP_KEYS as STEP_ARGS
from pytest_modelprof.gate.setting_values import (
    TIMING_VERDICTS,
    parse_bool,
    parse_exponent,
    parse_rounds,
    parse_verdicts,
)
from pytest_modelprof.gate.shapes import parse_input_shape, parse_sweep
from pytest_modelprof.instructions.mode import instructions_mode
from pytest_modelprof.llm.marker import parse_llm

__all__ = [
    "TIMING_VERDICTS",
    "MARKER_SIGNATURE",
    "Limits",
    "SessionSettings",
    "ProfileRequest",
    "MarkerSpec",
    "cli_flag",
    "ini_key",
    "resolve_session",
    "resolve_marker",
    "parse_input_shape",
    "parse_capture_options",
    "parse_limit_items",
]

#: Settings: how a test is measured and judged, not a limit on a metric. Marker keywords; the
#: few a CI sets run-wide have a flag and an ini key too (:data:`SESSION_SETTINGS`).
#: ``fvcore``: cross-check FLOPs against fvcore. ``timing_verdicts``: unset, a decisive latency
#: regression beyond a limit fails and an undecided one warns; ``"fail"`` fails every timing
#: limit (compile time, latency growth) too; ``"warn"`` keeps them all warnings.
#: ``timing_rounds``: rounds per measurement. ``fail_on_uncounted``: any op without a cost
#: formula fails (a *new* one always does). ``fail_on_improvement``: an improvement beyond
#: tolerance fails, so baselines stay tight. ``compile_dynamic``: ``torch.compile(dynamic=)``.
SETTINGS: Final = (
    "fvcore", "timing_verdicts", "timing_rounds", "fail_on_uncounted", "fail_on_improvement",
    "compile_dynamic",
)
#: The settings with a run-wide ``--modelprof-<name>`` flag and ``modelprof_<name>`` ini key
#: (``fvcore`` has the flag only): the base every marker is resolved over.
SESSION_SETTINGS: Final = ("fail_on_improvement", "fail_on_uncounted", "timing_verdicts")
#: Every limit of the built-in metrics, in the order the reference lists them (a session's own
#: metrics add theirs: :func:`limit_names`).
BUILTIN_LIMIT_NAMES: Final[tuple[str, ...]] = (
    *(m.delta_key for m in BUILTIN_METRICS),
    *(m.budget_key for m in BUILTIN_METRICS if m.budget_key),
    "max_fvcore_delta",  # how far the FLOPs may disagree with fvcore's (with fvcore=True)
    *BUILTIN_METRICS.growth_limits(),
)
#: Marker-only arguments: what to profile and how (``sweep`` names the axes of a scaling sweep;
#: ``dtype``, ``mode``, ``include_backward`` go to ``profile_model``, STEP_ARGS to fit).
MARKER_ARGS: Final = (
    "model", "input_shape", "inputs", "device", "name", "sweep",
    "dtype", "mode", "include_backward", "llm", *STEP_ARGS,
)
#: The marker's signature as ``pytest --markers`` shows it (limits by pattern, not one by one).
MARKER_SIGNATURE: Final = (
    "profile(model=None, input_shape=None, inputs=None, device=None, name=None, sweep=None, "
    "dtype=None, mode='auto', include_backward=False, llm=None, optimizer='adamw', "
    "precision='fp32', device_count=1, shard='none', checkpointing=False, fvcore=False, "
    "timing_verdicts=None, timing_rounds=100, fail_on_uncounted=False, fail_on_improvement=None, "
    "compile_dynamic=None, max_<metric>=None, max_<metric>_delta=None, max_<metric>_growth=None)"
)
#: The capture modes ``mode=`` accepts (see ``profile_model``).
MODES: Final = ("auto", "meta", "fake", "real")
DEFAULT_FVCORE_DELTA: Final[Tolerance] = Relative(0.05)
DEFAULT_TIMING_ROUNDS: Final = 100


def limit_names() -> tuple[str, ...]:
    """:data:`BUILTIN_LIMIT_NAMES` plus the limits of the session's own metrics (the active
    set)."""
    table = active_metrics()
    extra = (*table.limit_keys(), *table.growth_limits())
    return (*BUILTIN_LIMIT_NAMES, *(k for k in extra if k not in BUILTIN_LIMIT_NAMES))


def cli_flag(key: str) -> str:
    """``fail_on_improvement`` -> ``--modelprof-fail-on-improvement``."""
    return "--modelprof-" + key.replace("_", "-")


def ini_key(key: str) -> str:
    """``fail_on_improvement`` -> ``modelprof_fail_on_improvement``."""
    return "modelprof_" + key


def parse_limit_items(
    items: Iterable[str], source: str, names: Sequence[str] | None = None
) -> dict[str, str]:
    """``["max_flops_delta=5%", ...]`` -> ``{"max_flops_delta": "5%"}``, in order (a later item
    wins). A missing ``=`` or a name not in ``names`` (default: :func:`limit_names`) is a
    :class:`SettingsError` that names ``source`` and the nearest names; the values are checked
    by :meth:`Limits.with_values`."""
    known = limit_names() if names is None else names
    out: dict[str, str] = {}
    for item in items:
        name, sep, value = str(item).partition("=")
        name = name.strip()
        if not sep or not name:
            raise SettingsError(
                f"{source}: expected NAME=VALUE such as max_flops_delta=5%, got {str(item)!r}"
            )
        if name not in known:
            what = "a setting, not a limit" if name in SETTINGS else "not a limit"
            hint = did_you_mean(name, known) or (
                f"; set it as @pytest.mark.profile({name}=...)" if name in SETTINGS else ""
            )
            raise SettingsError(
                f"{source}: {name!r} is {what}{hint}; limits are max_<metric> (a budget), "
                "max_<metric>_delta (relative) and max_<metric>_growth (a sweep's exponent)"
            )
        out[name] = value.strip()
    return out


@dataclass(frozen=True)
class Limits:
    """Tolerances and budgets by metric name, plus the settings (:data:`SETTINGS`)."""

    tolerances: Mapping[str, Tolerance] = field(default_factory=dict)
    budgets: Mapping[str, Budget] = field(default_factory=dict)
    explicit: frozenset[str] = frozenset()
    fvcore: bool = False
    max_fvcore_delta: Tolerance = DEFAULT_FVCORE_DELTA
    timing_verdicts: str | None = None  # None: decisive latency regressions fail (see above)
    timing_rounds: int = DEFAULT_TIMING_ROUNDS
    growth: Mapping[str, float] = field(default_factory=dict)  # growth limit -> exponent
    fail_on_uncounted: bool = False  # any uncounted op fails, not only a new one
    # torch.compile(dynamic=...) for the compile-health limits: None is torch's default
    # (automatic dynamic shapes after a recompile), True or False force it.
    compile_dynamic: bool | None = None
    fail_on_improvement: bool | None = None  # None: the session's --modelprof-fail-on-improvement

    def limited(self, metric: str) -> bool:
        """Whether a limit on ``metric`` was set explicitly and is not ``"ignore"``.

        Only such a limit switches an expensive collector on (timing rounds, compile)."""
        if metric not in self.explicit:
            return False
        tolerance = self.tolerances.get(metric, Ignore())
        return metric in self.budgets or not isinstance(tolerance, Ignore)

    @property
    def wants_latency(self) -> bool:
        """A latency limit was set and is not off (latency is measured only then: it costs time)."""
        return self.limited("latency")

    @property
    def timing_fails(self) -> bool | None:
        """``timing_verdicts`` as the timing judges take it: ``True`` every timing limit fails,
        ``False`` all warn, ``None`` a decisive latency regression fails."""
        return None if self.timing_verdicts is None else self.timing_verdicts == "fail"

    def policy(self, *, fail_on_environment: bool = False) -> Policy:
        """The pure comparison policy these limits describe."""
        return Policy(
            dict(self.tolerances), dict(self.budgets), self.explicit, fail_on_environment
        )

    def describe(self) -> dict[str, str]:
        """Every effective limit as text, for the ``settings`` of a baseline file."""
        policy = self.policy()
        out: dict[str, str] = {}
        for metric in active_metrics():
            if metric.name == "instructions" and not self.limited(metric.name):
                continue  # opt-in: baselines that never counted instructions stay as they were
            out[metric.delta_key] = format_tolerance(
                policy.tolerance(metric), drop=metric.direction == "higher"
            )
            budget = policy.budget(metric)
            if metric.budget_key and budget is not None:
                out[metric.budget_key] = f"{budget.limit:g}"
        if self.fvcore:
            out["fvcore"] = "true"
            out["max_fvcore_delta"] = format_tolerance(self.max_fvcore_delta)
        if self.wants_latency:
            out["timing_verdicts"] = self.timing_verdicts or "auto"
            out["timing_rounds"] = str(self.timing_rounds)
        for key, exponent in sorted(self.growth.items()):
            out[key] = f"{exponent:g}"
        if self.fail_on_uncounted:
            out["fail_on_uncounted"] = "true"
        if self.compile_dynamic is not None:
            out["compile_dynamic"] = "true" if self.compile_dynamic else "false"
        return out

    def with_values(self, values: Mapping[str, object], source: str) -> Limits:
        """These limits overridden by ``values`` (limit or setting name -> raw value) from
        ``source``."""
        tolerances = dict(self.tolerances)
        budgets = dict(self.budgets)
        explicit = set(self.explicit)
        fvcore, fvcore_delta = self.fvcore, self.max_fvcore_delta
        timing_verdicts, timing_rounds = self.timing_verdicts, self.timing_rounds
        growth = dict(self.growth)
        fail_on_uncounted = self.fail_on_uncounted
        compile_dynamic = self.compile_dynamic
        fail_on_improvement = self.fail_on_improvement
        table = active_metrics()
        for key, raw in values.items():
            if raw is None:
                continue  # None is "not given": the limit of the level below (or the default)
            try:
                if key == "compile_dynamic":
                    auto = str(raw).strip().lower() == "auto"
                    compile_dynamic = None if auto else parse_bool(raw)
                elif key == "fail_on_uncounted":
                    fail_on_uncounted = parse_bool(raw)
                elif key == "fail_on_improvement":
                    fail_on_improvement = parse_bool(raw)
                elif key == "fvcore":
                    fvcore = parse_bool(raw)
                elif key == "max_fvcore_delta":
                    fvcore_delta = parse_tolerance(raw)
                elif key == "timing_verdicts":
                    timing_verdicts = parse_verdicts(raw)
                elif key == "timing_rounds":
                    timing_rounds = parse_rounds(raw)
                elif key in table.growth_limits():
                    if is_off(raw):  # as a tolerance is switched off: nothing is swept for it
                        growth.pop(key, None)
                    else:
                        growth[key] = parse_exponent(raw)
                else:
                    metric = table.limit_keys()[key]
                    if key == metric.delta_key:
                        tolerances[metric.name] = parse_tolerance(raw)
                    else:
                        budget = parse_budget(raw, metric.budget_parser)
                        if budget is None:
                            budgets.pop(metric.name, None)
                        else:
                            budgets[metric.name] = budget
                    explicit.add(metric.name)
            except (ValueError, KeyError, OverflowError) as exc:
                raise SettingsError(
                    f"{source}: bad value for {key}={shown(raw)}: {_why(exc)}"
                ) from None
        return Limits(
            tolerances, budgets, frozenset(explicit), fvcore, fvcore_delta,
            timing_verdicts, timing_rounds, growth, fail_on_uncounted, compile_dynamic,
            fail_on_improvement,
        )


@dataclass(frozen=True)
class SessionSettings:
    """The run-wide settings, from the CLI and the ini file."""

    baseline_dir: Path
    update: bool = False
    # An improvement beyond tolerance fails (a marker's fail_on_improvement overrides it).
    fail_on_improvement: bool = False
    prune: bool = False
    limits: Limits = Limits()
    # Kernel-dependent counts fail even when the baseline comes from another environment.
    fail_on_environment: bool = False
    # Run the test bodies without profiling, gating or touching baselines.
    disable: bool = False
    # Without valgrind, a test with an instructions limit errors ("error") or is skipped.
    instructions: str = "error"

    def header(self) -> str:
        """The line the plugin prints in the session header."""
        if self.disable:
            return "modelprof: disabled (--modelprof-disable): tests run without profiling"
        mode = "update" if self.update else (
            "fail on improvement" if self.fail_on_improvement else "check"
        )
        return f"modelprof: baselines in {self.baseline_dir} ({mode})"


@dataclass(frozen=True)
class ProfileRequest:
    """What to profile: a model name or module plus its inputs, and how to capture it."""

    model: Any
    input_shape: Any = None
    inputs: Any = None
    device: str | None = None
    name: str | None = None
    dtype: str | None = None
    mode: str = "auto"
    include_backward: bool = False
    fail_on_uncounted: bool = False  # profile_model raises on an op without a cost formula
    llm: tuple[tuple[str, Any], ...] | None = None  # the marker's llm= (serving costs)
    # optimizer, precision, device_count, shard, checkpointing of the memory metrics' step (pairs)
    step: tuple[tuple[str, Any], ...] = ()

    def engine_kwargs(self) -> dict[str, Any]:
        """The keyword arguments of ``profile_model`` this request sets."""
        out: dict[str, Any] = {}
        for key in ("input_shape", "inputs", "device", "dtype"):
            value = getattr(self, key)
            if value is not None:
                out[key] = value
        if self.mode != "auto":
            out["mode"] = self.mode
        if self.include_backward:
            out["include_backward"] = True
        if self.fail_on_uncounted:
            out["fail_on_uncounted"] = True
        return out


def parse_capture_options(values: Mapping[str, object], source: str) -> dict[str, Any]:
    """``dtype``, ``mode``, ``include_backward`` and ``fail_on_uncounted`` of a marker or fixture
    call."""
    out: dict[str, Any] = {}
    dtype = values.get("dtype")
    if dtype is not None:
        text = str(dtype).removeprefix("torch.")
        if not text.isidentifier():
            raise SettingsError(f"{source}: dtype={dtype!r} is not a dtype; write e.g. 'bfloat16'")
        out["dtype"] = text
    mode = values.get("mode")
    if mode is not None:
        if mode not in MODES:
            raise SettingsError(
                f"{source}: mode={mode!r} is not a capture mode; expected one of "
                f"{', '.join(MODES)}{did_you_mean(str(mode), MODES)}"
            )
        out["mode"] = mode
    for key in ("include_backward", "fail_on_uncounted"):
        raw = values.get(key)
        if raw is not None:
            if not isinstance(raw, bool):
                raise SettingsError(f"{source}: {key}={raw!r} must be True or False")
            out[key] = raw
    if any(values.get(k) is not None for k in STEP_ARGS):
        from pytest_modelprof.fit.options import step_pairs

        out["step"] = step_pairs(values, source, SettingsError)
    return out


@dataclass(frozen=True)
class MarkerSpec:
    """One test's ``@pytest.mark.profile``, resolved over the session settings."""

    request: ProfileRequest | None  # None: the test calls the ``modelprof`` fixture
    name: str | None
    input_shape: Any
    device: str | None
    limits: Limits
    sweep: Mapping[str, list[int]] | None = None
    capture: Mapping[str, Any] = field(default_factory=dict)  # dtype, mode, ..., llm, step


def _why(exc: BaseException) -> str:
    return str(exc.args[0]) if exc.args else type(exc).__name__


def _given(value: object) -> bool:
    return value is not None and value != ""


def resolve_session(
    cli: Mapping[str, object],
    ini: Mapping[str, object],
    *,
    rootdir: Path,
    invocation_dir: Path,
    ini_dir: Path | None = None,
) -> SessionSettings:
    """CLI over ini over built-in defaults. Keys are setting names (``baseline_dir``,
    ``fail_on_improvement``, ...; ``None`` or ``""`` means not given) and ``limit``, the
    ``NAME=VALUE`` items of ``--modelprof-limit`` and of the ``modelprof_limits`` ini list."""
    limits = _session_limits(cli, ini)
    if _given(cli.get("baseline_dir")):
        baseline_dir = invocation_dir / str(cli["baseline_dir"])
    elif _given(ini.get("baseline_dir")):
        baseline_dir = (ini_dir or rootdir) / str(ini["baseline_dir"])
    else:
        baseline_dir = rootdir / "baselines"

    def flag(key: str) -> bool:
        for source, values in ((cli_flag(key), cli), (f"ini {ini_key(key)}", ini)):
            if _given(values.get(key)):
                try:
                    return parse_bool(values[key])
                except ValueError as exc:
                    raise SettingsError(f"{source}: {_why(exc)}") from None
        return False

    return SessionSettings(
        baseline_dir=Path(baseline_dir).resolve(),
        update=flag("update_baselines"),
        fail_on_improvement=flag("fail_on_improvement"),
        prune=flag("prune_baselines"),
        limits=limits,
        fail_on_environment=flag("fail_on_environment"),
        disable=flag("disable"),
        instructions=instructions_mode(cli, ini),
    )


def _session_limits(cli: Mapping[str, object], ini: Mapping[str, object]) -> Limits:
    """The limits and session settings of the ini file, then the command line's over them."""
    limits = Limits()
    for values, from_ini in ((ini, True), (cli, False)):
        source = f"ini {ini_key('limits')}" if from_ini else "--modelprof-limit"
        for item in _items(values.get("limit")):
            # One item at a time: an error is about the ini line or the flag value at fault.
            limits = limits.with_values(parse_limit_items([item], source), source)
        for key in (*SESSION_SETTINGS, "fvcore"):
            if _given(values.get(key)):
                where = f"ini {ini_key(key)}" if from_ini else cli_flag(key)
                limits = limits.with_values({key: values[key]}, where)
    return limits


def _items(raw: object) -> list[str]:
    """The ``NAME=VALUE`` items of a repeated flag or an ini line list."""
    if raw is None or raw == "":
        return []
    if isinstance(raw, str):
        return [line for line in raw.splitlines() if line.strip()]
    return [str(item) for item in raw if str(item).strip()]  # type: ignore[attr-defined]


def resolve_marker(
    args: Sequence[object],
    kwargs: Mapping[str, object],
    base: Limits,
    *,
    where: str,
) -> MarkerSpec:
    """One ``@pytest.mark.profile(...)`` over the session limits; unknown arguments are errors."""
    source = f"marker on {where}"
    if len(args) > 1:
        raise SettingsError(
            f"{source}: profile() takes at most one positional argument (the model), "
            f"got {len(args)}; pass the rest by keyword, e.g. input_shape=(1, 3, 224, 224)"
        )
    values = dict(kwargs)
    if args:
        if "model" in values:
            raise SettingsError(f"{source}: model given both positionally and as model=")
        values["model"] = args[0]
    known = (*MARKER_ARGS, *SETTINGS, *limit_names())
    unknown = sorted(k for k in values if k not in known)
    if unknown:
        near = [did_you_mean(k, known) for k in unknown]
        raise SettingsError(
            f"{source}: unknown argument{'s' if len(unknown) > 1 else ''} "
            f"{', '.join(unknown)} for @pytest.mark.profile{''.join(near)}"
            # A near miss says enough; a word nothing resembles gets the patterns, not the list.
            + ("" if all(near) else "; a limit is max_<metric>, max_<metric>_delta or "
               "max_<metric>_growth; pytest --markers lists the other arguments")
        )
    name = values.get("name")
    if name is not None and (not isinstance(name, str) or not name):
        raise SettingsError(f"{source}: name={name!r} must be a non-empty string")
    device = values.get("device")
    if device is not None and not isinstance(device, str):
        device = str(device)  # torch.device("cpu") -> "cpu"
    input_shape = parse_input_shape(values.get("input_shape"), source)
    # fail_on_uncounted is both: profile_model raises at the profile (the fixture's calls too),
    # and the gate fails on any uncounted op of a profile that got through.
    capture = parse_capture_options(values, source)
    if values.get("llm") is not None:  # serving costs; a fixture call inherits it as capture does
        capture["llm"] = parse_llm(values["llm"], source)
    names = (*SETTINGS, *limit_names())
    limits = base.with_values({k: v for k, v in values.items() if k in names}, source)
    sweep = parse_sweep(values.get("sweep"), source)
    # Growth limits from the CLI or ini apply to tests with a sweep; in a marker they need one.
    growth_keys = active_metrics().growth_limits()
    marker_growth = sorted(k for k in values if k in growth_keys and k in limits.growth)
    if marker_growth and sweep is None:
        raise SettingsError(
            f"{source}: {', '.join(marker_growth)} needs a sweep, e.g. "
            f"sweep={{'batch': [1, 8, 32]}}"
        )
    model = values.get("model")
    request = None
    if model is not None:
        request = ProfileRequest(model, input_shape, values.get("inputs"), device, name, **capture)
    return MarkerSpec(request, name, input_shape, device, limits, sweep, capture)
