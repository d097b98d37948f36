"""A test's limits and settings: their names, the ``NAME=VALUE`` items, and :class:`Limits`.

A limit is written ``NAME=VALUE`` everywhere: a marker keyword, ``--modelprof-limit``
(repeatable), a line of the ``modelprof_limits`` ini list, ``modelprof compare --limit``.
:meth:`Limits.with_values` layers one source over another; every error is a
:class:`~pytest_modelprof.errors.SettingsError` naming the source. Standard library only (plus
the light tolerance and metric tables): the plugin resolves limits at start-up.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Final

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
from pytest_modelprof.gate.setting_values import (
    parse_bool,
    parse_exponent,
    parse_rounds,
    parse_verdicts,
)

__all__ = [
    "SETTINGS",
    "Limits",
    "limit_names",
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
#: Every limit of the built-in metrics, in the order the reference lists them (a session's own
#: metrics add theirs: :func:`limit_names`).
BUILTIN_LIMIT_NAMES: Final[tuple[str, ...]] = (
    *(m.delta_key for m in BUILTIN_METRICS),
    *(m.budget_key for m in BUILTIN_METRICS if m.budget_key),
    "max_fvcore_delta",  # how far the FLOPs may disagree with fvcore's (with fvcore=True)
    *BUILTIN_METRICS.growth_limits(),
)
DEFAULT_FVCORE_DELTA: Final[Tolerance] = Relative(0.05)
DEFAULT_TIMING_ROUNDS: Final = 100


def limit_names() -> tuple[str, ...]:
    """:data:`BUILTIN_LIMIT_NAMES` plus the limits of the session's own metrics (the active
    set)."""
    table = active_metrics()
    extra = (*table.limit_keys(), *table.growth_limits())
    return (*BUILTIN_LIMIT_NAMES, *(k for k in extra if k not in BUILTIN_LIMIT_NAMES))


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


def _why(exc: BaseException) -> str:
    return str(exc.args[0]) if exc.args else type(exc).__name__
