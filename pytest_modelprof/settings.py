"""Gate settings, resolved once into frozen values. Precedence: marker > CLI > ini > built-in.

:func:`resolve_session` turns the CLI and ini values into :class:`SessionSettings` at configure
time; :func:`resolve_marker` layers one test's ``@pytest.mark.profile`` on top. Every error is a
:class:`~pytest_modelprof.errors.SettingsError` that names where the bad value came from
(``--modelprof-max-flops-delta``, ``ini modelprof_max_flops_delta``, ``marker on <nodeid>``).

Standard library only (plus the light tolerance and metric tables): the plugin calls this at
start-up in every run, so it must not import pydantic or torch.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from pytest_modelprof.baseline.compare import Policy
from pytest_modelprof.baseline.metrics import LIMIT_KEYS, METRICS
from pytest_modelprof.baseline.tolerance import (
    Budget,
    Relative,
    Tolerance,
    format_tolerance,
    parse_budget,
    parse_tolerance,
)
from pytest_modelprof.errors import SettingsError

__all__ = [
    "FVCORE_KEYS",
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
]

FVCORE_KEYS: Final = ("fvcore", "max_fvcore_delta")
#: Every limit-like setting, in the order the help text lists them.
LIMIT_NAMES: Final[tuple[str, ...]] = (
    *(m.delta_key for m in METRICS),
    *(m.budget_key for m in METRICS if m.budget_key),
    *FVCORE_KEYS,
)
MARKER_ARGS: Final = ("model", "input_shape", "inputs", "device", "name")
MARKER_SIGNATURE: Final = (
    "profile(model=None, input_shape=None, inputs=None, device=None, name=None, "
    + ", ".join(f"{k}=None" for k in LIMIT_NAMES if k != "fvcore")
    + ", fvcore=False)"
)
DEFAULT_FVCORE_DELTA: Final[Tolerance] = Relative(0.05)


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

    def policy(self) -> Policy:
        """The pure comparison policy these limits describe."""
        return Policy(dict(self.tolerances), dict(self.budgets), self.explicit)

    def describe(self) -> dict[str, str]:
        """Every effective limit as text, for the ``settings`` of a baseline file."""
        policy = self.policy()
        out: dict[str, str] = {}
        for metric in METRICS:
            out[metric.delta_key] = format_tolerance(
                policy.tolerance(metric), drop=metric.direction == "higher"
            )
            budget = policy.budget(metric)
            if metric.budget_key and budget is not None:
                out[metric.budget_key] = f"{budget.limit:g}"
        if self.fvcore:
            out["fvcore"] = "true"
            out["max_fvcore_delta"] = format_tolerance(self.max_fvcore_delta)
        return out

    def with_values(self, values: Mapping[str, object], source: str) -> Limits:
        """These limits overridden by ``values`` (limit name -> raw value) from ``source``."""
        tolerances = dict(self.tolerances)
        budgets = dict(self.budgets)
        explicit = set(self.explicit)
        fvcore, fvcore_delta = self.fvcore, self.max_fvcore_delta
        for key, raw in values.items():
            try:
                if key == "fvcore":
                    fvcore = _parse_bool(raw)
                elif key == "max_fvcore_delta":
                    fvcore_delta = parse_tolerance(raw)
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
            except (ValueError, KeyError) as exc:
                raise SettingsError(f"{source}: bad value for {key}={raw!r}: {_why(exc)}") from None
        return Limits(tolerances, budgets, frozenset(explicit), fvcore, fvcore_delta)


@dataclass(frozen=True)
class SessionSettings:
    """The run-wide settings, from the CLI and the ini file."""

    baseline_dir: Path
    update: bool = False
    strict: bool = False
    prune: bool = False
    limits: Limits = Limits()

    def header(self) -> str:
        """The line the plugin prints in the session header."""
        mode = "update" if self.update else ("strict" if self.strict else "check")
        return f"modelprof: baselines in {self.baseline_dir} ({mode})"


@dataclass(frozen=True)
class ProfileRequest:
    """What to profile: a model name or module plus its inputs (hashable where possible)."""

    model: Any
    input_shape: Any = None
    inputs: Any = None
    device: str | None = None
    name: str | None = None


@dataclass(frozen=True)
class MarkerSpec:
    """One test's ``@pytest.mark.profile``, resolved over the session settings."""

    request: ProfileRequest | None  # None: the test calls the ``modelprof`` fixture
    name: str | None
    input_shape: Any
    device: str | None
    limits: Limits


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
    )


def parse_input_shape(value: object, source: str) -> Any:
    """``[1, 3, 64, 64]`` -> ``(1, 3, 64, 64)``; several inputs as a tuple of shapes."""
    if value is None:
        return None

    def shape(v: object) -> tuple[int, ...] | None:
        if isinstance(v, Sequence) and not isinstance(v, str) and v:
            if all(isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in v):
                return tuple(v)
        return None

    single = shape(value)
    if single is not None:
        return single
    if isinstance(value, Sequence) and not isinstance(value, str) and value:
        many = [shape(v) for v in value]
        if all(s is not None for s in many):
            return tuple(many)
    raise SettingsError(
        f"{source}: input_shape={value!r} is not a shape; write e.g. (1, 3, 224, 224) "
        f"or a list of shapes for several inputs"
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
    unknown = sorted(k for k in values if k not in MARKER_ARGS and k not in LIMIT_NAMES)
    if unknown:
        raise SettingsError(
            f"{source}: unknown argument{'s' if len(unknown) > 1 else ''} "
            f"{', '.join(unknown)} for @pytest.mark.profile; expected {MARKER_SIGNATURE}"
        )
    name = values.get("name")
    if name is not None and (not isinstance(name, str) or not name):
        raise SettingsError(f"{source}: name={name!r} must be a non-empty string")
    device = values.get("device")
    if device is not None and not isinstance(device, str):
        device = str(device)  # torch.device("cpu") -> "cpu"
    input_shape = parse_input_shape(values.get("input_shape"), source)
    limits = base.with_values({k: v for k, v in values.items() if k in LIMIT_NAMES}, source)
    model = values.get("model")
    request = None
    if model is not None:
        request = ProfileRequest(model, input_shape, values.get("inputs"), device, name)
    return MarkerSpec(request, name, input_shape, device, limits)

