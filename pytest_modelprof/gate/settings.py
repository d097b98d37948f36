"""Gate settings, resolved once into frozen values. Precedence: marker > CLI > ini > built-in.

:func:`resolve_session` turns the CLI and ini values into :class:`SessionSettings` at configure
time; :func:`resolve_marker` layers one test's ``@pytest.mark.profile`` on top. Every error is a
:class:`~pytest_modelprof.errors.SettingsError` that names where the bad value came from
(``--modelprof-max-flops-delta``, ``ini modelprof_max_flops_delta``, ``marker on <nodeid>``).

Standard library only (plus the light tolerance and metric tables): the plugin calls this at
start-up in every run, so it must not import pydantic or torch.
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from pytest_modelprof.baseline.compare import Policy
from pytest_modelprof.baseline.metrics import GROWTH_LIMITS, LIMIT_KEYS, METRICS
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
from pytest_modelprof.errors import SettingsError
from pytest_modelprof.fit.options import STEP_KEYS as STEP_ARGS
from pytest_modelprof.gate.shapes import parse_input_shape, parse_sweep
from pytest_modelprof.instructions.mode import instructions_mode
from pytest_modelprof.llm.marker import parse_llm

__all__ = [
    "FVCORE_KEYS",
    "TIMING_KEYS",
    "BOOL_KEYS",
    "DEFAULT_TIMING_ROUNDS",
    "LIMIT_NAMES",
    "MARKER_ARGS",
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
    "did_you_mean",
    "limit_names",
    "MODES",
]

FVCORE_KEYS: Final = ("fvcore", "max_fvcore_delta")
#: ``timing_strict``: unset, a decisive latency regression beyond a limit fails and an undecided
#: one warns; ``False`` keeps every timing limit warn-only; ``True`` fails every timing limit
#: (compile time, latency growth) too. ``timing_rounds`` rounds per measurement.
TIMING_KEYS: Final = ("timing_strict", "timing_rounds")
#: Settings that are switches (a flag on the command line, a bool in the ini file).
#: ``strict_ops``: any op without a cost formula fails (a *new* one always does).
BOOL_KEYS: Final = ("fvcore", "timing_strict", "strict_ops")
#: Every limit-like setting, in the order the help text lists them.
LIMIT_NAMES: Final[tuple[str, ...]] = (
    *(m.delta_key for m in METRICS),
    *(m.budget_key for m in METRICS if m.budget_key),
    *FVCORE_KEYS,
    *TIMING_KEYS,
    "strict_ops",
    "compile_dynamic",
    *GROWTH_LIMITS,
)
#: Marker-only arguments: what to profile and how (``sweep`` names the axes of a scaling sweep;
#: ``dtype``, ``mode``, ``include_backward``, ``strict`` go to ``profile_model``, STEP_ARGS to fit).
MARKER_ARGS: Final = (
    "model", "input_shape", "inputs", "device", "name", "sweep",
    "dtype", "mode", "include_backward", "strict", "llm", *STEP_ARGS,
)
MARKER_SIGNATURE: Final = (
    "profile(model=None, input_shape=None, inputs=None, device=None, name=None, sweep=None, "
    "dtype=None, mode='auto', include_backward=False, strict=False, llm=None, optimizer='adamw', "
    "precision='fp32', devices=1, shard='none', checkpointing=False, "
    + ", ".join(f"{k}={'False' if k in BOOL_KEYS else 'None'}" for k in LIMIT_NAMES)
    + ")"
)
#: The capture modes ``mode=`` accepts (see ``profile_model``).
MODES: Final = ("auto", "meta", "fake", "real")
DEFAULT_FVCORE_DELTA: Final[Tolerance] = Relative(0.05)
DEFAULT_TIMING_ROUNDS: Final = 100


def limit_names() -> tuple[str, ...]:
    """:data:`LIMIT_NAMES` plus the limits of the session's own metrics (the active set)."""
    extra = tuple(k for k in (*LIMIT_KEYS, *GROWTH_LIMITS) if k not in LIMIT_NAMES)
    return (*LIMIT_NAMES, *extra)


def cli_flag(key: str) -> str:
    """``max_flops_delta`` -> ``--modelprof-max-flops-delta``."""
    return "--modelprof-" + key.replace("_", "-")


def ini_key(key: str) -> str:
    """``max_flops_delta`` -> ``modelprof_max_flops_delta``."""
    return "modelprof_" + key


@dataclass(frozen=True)
class Limits:
    """Tolerances and budgets by metric name, plus the fvcore cross-check switch."""

    tolerances: Mapping[str, Tolerance] = field(default_factory=dict)
    budgets: Mapping[str, Budget] = field(default_factory=dict)
    explicit: frozenset[str] = frozenset()
    fvcore: bool = False
    max_fvcore_delta: Tolerance = DEFAULT_FVCORE_DELTA
    timing_strict: bool | None = None  # None: decisive latency regressions fail (see above)
    timing_rounds: int = DEFAULT_TIMING_ROUNDS
    growth: Mapping[str, float] = field(default_factory=dict)  # GROWTH_LIMITS key -> exponent
    strict_ops: bool = False  # any uncounted op fails, not only a new one
    # torch.compile(dynamic=...) for the compile-health limits: None is torch's default
    # (automatic dynamic shapes after a recompile), True or False force it.
    compile_dynamic: bool | None = None

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
    def strict(self) -> bool:
        """Whether every uncounted op fails (``strict_ops``)."""
        return self.strict_ops

    def policy(self, *, env_strict: bool = False) -> Policy:
        """The pure comparison policy these limits describe."""
        return Policy(dict(self.tolerances), dict(self.budgets), self.explicit, env_strict)

    def describe(self) -> dict[str, str]:
        """Every effective limit as text, for the ``settings`` of a baseline file."""
        policy = self.policy()
        out: dict[str, str] = {}
        for metric in METRICS:
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
            strict = self.timing_strict
            out["timing_strict"] = "auto" if strict is None else ("true" if strict else "false")
            out["timing_rounds"] = str(self.timing_rounds)
        for key, exponent in sorted(self.growth.items()):
            out[key] = f"{exponent:g}"
        if self.strict_ops:
            out["strict_ops"] = "true"
        if self.compile_dynamic is not None:
            out["compile_dynamic"] = "true" if self.compile_dynamic else "false"
        return out

    def with_values(self, values: Mapping[str, object], source: str) -> Limits:
        """These limits overridden by ``values`` (limit name -> raw value) from ``source``."""
        tolerances = dict(self.tolerances)
        budgets = dict(self.budgets)
        explicit = set(self.explicit)
        fvcore, fvcore_delta = self.fvcore, self.max_fvcore_delta
        timing_strict, timing_rounds = self.timing_strict, self.timing_rounds
        growth = dict(self.growth)
        strict_ops = self.strict_ops
        compile_dynamic = self.compile_dynamic
        for key, raw in values.items():
            if raw is None:
                continue  # None is "not given": the limit of the level below (or the default)
            try:
                if key == "compile_dynamic":
                    auto = str(raw).strip().lower() == "auto"
                    compile_dynamic = None if auto else _parse_bool(raw)
                elif key == "strict_ops":
                    strict_ops = _parse_bool(raw)
                elif key == "fvcore":
                    fvcore = _parse_bool(raw)
                elif key == "max_fvcore_delta":
                    fvcore_delta = parse_tolerance(raw)
                elif key == "timing_strict":
                    timing_strict = _parse_bool(raw)
                elif key == "timing_rounds":
                    timing_rounds = _parse_rounds(raw)
                elif key in GROWTH_LIMITS:
                    if is_off(raw):  # as a tolerance is switched off: nothing is swept for it
                        growth.pop(key, None)
                    else:
                        growth[key] = _parse_exponent(raw)
                else:
                    metric = LIMIT_KEYS[key]
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
            timing_strict, timing_rounds, growth, strict_ops, compile_dynamic,
        )


@dataclass(frozen=True)
class SessionSettings:
    """The run-wide settings, from the CLI and the ini file."""

    baseline_dir: Path
    update: bool = False
    strict: bool = False
    prune: bool = False
    limits: Limits = Limits()
    # Kernel-dependent counts fail even when the baseline comes from another environment.
    env_strict: bool = False
    # Run the test bodies without profiling, gating or touching baselines.
    disable: bool = False
    # Without valgrind, a test with an instructions limit errors ("error") or is skipped.
    instructions: str = "error"

    def header(self) -> str:
        """The line the plugin prints in the session header."""
        if self.disable:
            return "modelprof: disabled (--modelprof-disable): tests run without profiling"
        mode = "update" if self.update else ("strict" if self.strict else "check")
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
    strict: bool = False
    llm: tuple[tuple[str, Any], ...] | None = None  # the marker's llm= (serving costs)
    # optimizer, precision, devices, shard, checkpointing of the memory metrics' step (pairs)
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
        if self.strict:
            out["strict"] = True
        return out


def parse_capture_options(values: Mapping[str, object], source: str) -> dict[str, Any]:
    """``dtype``, ``mode``, ``include_backward`` and ``strict`` of a marker or fixture call."""
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
    for key in ("include_backward", "strict"):
        raw = values.get(key)
        if raw is not None:
            if not isinstance(raw, bool):
                raise SettingsError(f"{source}: {key}={raw!r} must be True or False")
            out[key] = raw
    if any(values.get(k) is not None for k in STEP_ARGS):
        from pytest_modelprof.fit.options import step_pairs

        out["step"] = step_pairs(values, source, SettingsError)
    return out


def did_you_mean(word: str, choices: Sequence[str]) -> str:
    """``"; did you mean max_flops_delta?"`` for a near miss, else ``""``."""
    close = difflib.get_close_matches(word, list(choices), n=2, cutoff=0.6)
    return f"; did you mean {' or '.join(close)}?" if close else ""


@dataclass(frozen=True)
class MarkerSpec:
    """One test's ``@pytest.mark.profile``, resolved over the session settings."""

    request: ProfileRequest | None  # None: the test calls the ``modelprof`` fixture
    name: str | None
    input_shape: Any
    device: str | None
    limits: Limits
    sweep: Mapping[str, list[int]] | None = None
    capture: Mapping[str, Any] = field(default_factory=dict)  # dtype, mode, backward, strict, llm


def _why(exc: BaseException) -> str:
    return str(exc.args[0]) if exc.args else type(exc).__name__


def _parse_bool(raw: object) -> bool:
    if isinstance(raw, bool):
        return raw
    if isinstance(raw, str):
        text = raw.strip().lower()
        if text in {"1", "true", "yes", "on"}:
            return True
        if text in {"0", "false", "no", "off", ""}:
            return False
    raise ValueError(f"expected true or false, got {raw!r}")


#: The most timing rounds a setting may ask for: more would run for hours (a typo, not a wish).
MAX_TIMING_ROUNDS: Final = 100_000


def _parse_rounds(raw: object) -> int:
    if isinstance(raw, int) and not isinstance(raw, bool):
        value = raw
    else:
        try:
            value = int(str(raw)) if not isinstance(raw, bool) else -1
        except ValueError:
            value = -1
    if not 10 <= value <= MAX_TIMING_ROUNDS:
        raise ValueError(f"timing_rounds must be an integer from 10 to {MAX_TIMING_ROUNDS:,}")
    return value


def _parse_exponent(raw: object) -> float:
    if isinstance(raw, bool):
        raise ValueError("expected a growth exponent such as 1.1")
    try:
        value = float(raw) if isinstance(raw, (int, float)) else float(str(raw))
    except OverflowError:
        value = math.inf
    if not (value > 0 and math.isfinite(value)):
        raise ValueError("a growth exponent must be a finite number > 0")
    return value


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
    """CLI over ini over built-in defaults. Keys are setting names (``max_flops_delta``,
    ``baseline_dir``, ``strict``, ...); ``None`` or ``""`` means not given."""
    limits = Limits()
    ini_values = {k: ini[k] for k in LIMIT_NAMES if _given(ini.get(k))}
    for key, raw in ini_values.items():
        limits = limits.with_values({key: raw}, f"ini {ini_key(key)}")
    for key in LIMIT_NAMES:
        if _given(cli.get(key)):
            limits = limits.with_values({key: cli[key]}, cli_flag(key))

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
                    return _parse_bool(values[key])
                except ValueError as exc:
                    raise SettingsError(f"{source}: {_why(exc)}") from None
        return False

    return SessionSettings(
        baseline_dir=Path(baseline_dir).resolve(),
        update=flag("update"),
        strict=flag("strict"),
        prune=flag("prune"),
        limits=limits,
        env_strict=flag("env_strict"),
        disable=flag("disable"),
        instructions=instructions_mode(cli, ini),
    )


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
            f"got {len(args)}; pass the rest by keyword: {MARKER_SIGNATURE}"
        )
    values = dict(kwargs)
    if args:
        if "model" in values:
            raise SettingsError(f"{source}: model given both positionally and as model=")
        values["model"] = args[0]
    known = (*MARKER_ARGS, *limit_names())
    unknown = sorted(k for k in values if k not in known)
    if unknown:
        near = [did_you_mean(k, known) for k in unknown]
        hints = "".join(near)
        raise SettingsError(
            f"{source}: unknown argument{'s' if len(unknown) > 1 else ''} "
            f"{', '.join(unknown)} for @pytest.mark.profile"
            # A near miss says enough; the whole signature is for a word nothing resembles.
            + (hints if all(near) else f"{hints}; expected {MARKER_SIGNATURE}")
        )
    name = values.get("name")
    if name is not None and (not isinstance(name, str) or not name):
        raise SettingsError(f"{source}: name={name!r} must be a non-empty string")
    device = values.get("device")
    if device is not None and not isinstance(device, str):
        device = str(device)  # torch.device("cpu") -> "cpu"
    input_shape = parse_input_shape(values.get("input_shape"), source)
    capture = parse_capture_options(values, source)
    if values.get("llm") is not None:  # serving costs; a fixture call inherits it as capture does
        capture["llm"] = parse_llm(values["llm"], source)
    limits = base.with_values({k: v for k, v in values.items() if k in limit_names()}, source)
    sweep = parse_sweep(values.get("sweep"), source)
    # Growth limits from the CLI or ini apply to tests with a sweep; in a marker they need one.
    marker_growth = sorted(k for k in values if k in GROWTH_LIMITS and k in limits.growth)
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
