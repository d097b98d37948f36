"""The regression gate without pytest: profile (with a session cache), compare, decide, write.

The plugin calls :func:`evaluate` once per profile registered in a test and turns the
:class:`Outcome` into one ``pytest.fail``. Records are plain JSON-able values so that xdist
workers can ship them to the controller on the test report.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, Literal

from pytest_modelprof.baseline.compare import Comparison, Policy, compare, format_change
from pytest_modelprof.baseline.metrics import METRICS
from pytest_modelprof.baseline.store import baseline_relpath, read_text, write_atomic
from pytest_modelprof.baseline.tolerance import Ignore, Relative
from pytest_modelprof.errors import BaselineError, ModelprofError, SettingsError
from pytest_modelprof.settings import Limits, ProfileRequest, SessionSettings, parse_input_shape

if TYPE_CHECKING:
    from pytest_modelprof.baseline.document import BaselineDocument
    from pytest_modelprof.schema import ModelProfile

__all__ = [
    "Status",
    "STATUS_ORDER",
    "GateRecord",
    "Outcome",
    "ProfileCache",
    "TestProfiles",
    "ModelprofFixture",
    "call_profile_model",
    "fvcore_failures",
    "measure_latency",
    "growth_failures",
    "evaluate",
    "update_command",
    "records_to_json",
    "records_from_json",
    "summary_lines",
]

Status = Literal["regressed", "missing", "error", "improved", "updated", "new", "ok"]
#: Summary order: what needs attention first.
STATUS_ORDER: Final[tuple[Status, ...]] = (
    "regressed",
    "missing",
    "error",
    "improved",
    "updated",
    "new",
    "ok",
)
ProfileFn = Callable[[ProfileRequest], "ModelProfile"]


@dataclass(frozen=True)
class GateRecord:
    """One profile's result, as the summary and other plugins see it (JSON-able)."""

    nodeid: str
    name: str | None
    model: str
    status: Status
    baseline_path: str  # relative to the baseline directory, always with "/"
    metrics: dict[str, float] = field(default_factory=dict)
    baseline_metrics: dict[str, float] = field(default_factory=dict)
    failed: bool = False
    # For the reports (HTML, JSON, Markdown): every metric's verdict, the profile and the
    # baseline it was judged against, all as JSON documents (see pytest_modelprof.results).
    checks: list[dict[str, Any]] = field(default_factory=list)
    profile: dict[str, Any] | None = None
    baseline: dict[str, Any] | None = None
    warnings: list[str] = field(default_factory=list)  # timing limits that warn, not fail
    # Raw measurements for the reports, as JSON: the timing rounds (runtime.NormalisedTiming)
    # and the scaling sweep (sweep.SweepResult) when the test asked for them.
    timing: dict[str, Any] | None = None
    sweep: dict[str, Any] | None = None

    @property
    def label(self) -> str:
        """``nodeid`` or ``nodeid@name``."""
        return self.nodeid if self.name is None else f"{self.nodeid}@{self.name}"


@dataclass(frozen=True)
class Outcome:
    """What the plugin does with one profile: the record, and a failure or a hint to print."""

    record: GateRecord
    failure: str | None = None
    hint: str | None = None
    comparison: Comparison | None = None


def records_to_json(records: Iterable[GateRecord]) -> str:
    """Records as one JSON string (the xdist transport on the test report)."""
    return json.dumps([asdict(r) for r in records], sort_keys=True)


def records_from_json(text: str) -> list[GateRecord]:
    """The inverse of :func:`records_to_json`."""
    return [GateRecord(**item) for item in json.loads(text)]


class ProfileCache:
    """Profiles already taken in this session, keyed by model, inputs and device.

    Names and shapes are keyed by value. Module and tensor objects are keyed by identity (plus
    their type, repr and shapes, so an edited architecture is profiled again) and kept alive
    by the cache so that an ``id`` cannot be reused by another object during the session.
    """

    def __init__(self) -> None:
        self._entries: dict[Hashable, tuple[object, ModelProfile]] = {}
        self.hits = 0

    @staticmethod
    def _key(request: ProfileRequest) -> Hashable:
        def obj_key(value: object) -> Hashable:
            if value is None or isinstance(value, (str, int, float, bool)):
                return ("value", value)
            if isinstance(value, tuple) and all(
                isinstance(v, (int, tuple)) or v is None for v in value
            ):
                return ("value", value)
            if isinstance(value, (list, tuple)):
                return ("seq", tuple(obj_key(v) for v in value))
            if isinstance(value, dict):
                return ("dict", tuple(sorted((str(k), obj_key(v)) for k, v in value.items())))
            shape = getattr(value, "shape", None)
            extra: Hashable = tuple(shape) if shape is not None else None
            if hasattr(value, "training") and callable(getattr(value, "parameters", None)):
                extra = (getattr(value, "training", None), repr(value))
            return ("object", id(value), type(value).__qualname__, extra)

        return (
            obj_key(request.model),
            obj_key(request.input_shape),
            obj_key(request.inputs),
            request.device,
        )

    def get_or_profile(self, request: ProfileRequest, profile_fn: ProfileFn) -> ModelProfile:
        """The cached profile for ``request``, or a new one from ``profile_fn``."""
        key = self._key(request)
        entry = self._entries.get(key)
        if entry is not None:
            self.hits += 1
            return entry[1]
        profile = profile_fn(request)
        self._entries[key] = ((request.model, request.inputs), profile)
        return profile


def call_profile_model(request: ProfileRequest) -> ModelProfile:
    """Profile with the real engine; imports torch on first use, never at plugin import."""
    from pytest_modelprof.profile import profile_model

    kwargs: dict[str, Any] = {}
    if request.input_shape is not None:
        kwargs["input_shape"] = request.input_shape
    if request.inputs is not None:
        kwargs["inputs"] = request.inputs
    if request.device is not None:
        kwargs["device"] = request.device
    return profile_model(request.model, **kwargs)


class TestProfiles:
    """The profiles one test registered, in order, told apart by ``name``."""

    __test__ = False  # not a pytest test class despite the name

    def __init__(self) -> None:
        self.entries: list[tuple[str | None, ProfileRequest, ModelProfile]] = []

    def check_free(self, name: str | None) -> None:
        """Raise :class:`SettingsError` if a profile under ``name`` is already registered."""
        if any(other == name for other, _, _ in self.entries):
            what = "without name=" if name is None else f"with name={name!r}"
            raise SettingsError(
                f"this test already profiled a model {what}; give each profile of a test "
                f"its own name=, e.g. modelprof(model, name='backbone')"
            )

    def add(self, name: str | None, request: ProfileRequest, profile: ModelProfile) -> None:
        """Register one profile; a second one under the same ``name`` is an error."""
        self.check_free(name)
        self.entries.append((name, request, profile))


class ModelprofFixture:
    """The ``modelprof`` fixture: ``modelprof(module_or_name, input_shape=..., name=...)``.

    Profiles the model (reusing a profile taken earlier in the session for the same model and
    inputs), registers it for this test's gate and returns the :class:`ModelProfile`.
    """

    def __init__(
        self,
        profiles: TestProfiles,
        profile: Callable[[ProfileRequest], ModelProfile],
        defaults: Callable[[], tuple[Any, str | None]],
    ) -> None:
        self._profiles = profiles
        self._profile = profile
        self._defaults = defaults

    def __call__(
        self,
        module_or_name: Any,
        input_shape: Any = None,
        inputs: Any = None,
        name: str | None = None,
        *,
        device: str | None = None,
    ) -> ModelProfile:
        """Profile ``module_or_name``, register it for the gate and return the profile."""
        if name is not None and (not isinstance(name, str) or not name):
            raise SettingsError(f"modelprof(): name={name!r} must be a non-empty string")
        default_shape, default_device = self._defaults()
        if input_shape is None and inputs is None:
            input_shape = default_shape
        shape = parse_input_shape(input_shape, "modelprof()")
        request = ProfileRequest(
            module_or_name, shape, inputs, device if device is not None else default_device, name
        )
        self._profiles.check_free(name)
        result = self._profile(request)
        self._profiles.add(name, request, result)
        return result


def fvcore_failures(request: ProfileRequest, limits: Limits) -> list[str]:
    """With ``fvcore=True``: our MACs against fvcore's on the same model and inputs."""
    if not limits.fvcore or isinstance(limits.max_fvcore_delta, Ignore):
        return []
    from pytest_modelprof.fvcore_compare import compare_with_fvcore
    from pytest_modelprof.units import format_count

    shape = request.input_shape
    single = shape if shape and all(isinstance(d, int) for d in shape) else None
    if shape is not None and single is None:
        return ["fvcore=True: the fvcore cross-check takes one input shape; pass inputs= instead"]
    try:
        result = compare_with_fvcore(request.model, single, inputs=request.inputs)
    except ModelprofError as exc:
        return [f"fvcore=True: {exc}"]
    tolerance = limits.max_fvcore_delta
    allowed = tolerance.fraction if isinstance(tolerance, Relative) else 0.0
    if result.within(allowed):
        return []
    skipped = ", ".join(f"{op} x{n}" for op, n in sorted(result.unsupported_ops.items()))
    return [
        f"fvcore cross-check: ours {format_count(result.ours_macs, 'MACs')} vs fvcore "
        f"{format_count(result.fvcore_macs, 'MACs')} ({result.relative_difference * 100:.1f} % "
        f"apart, max_fvcore_delta {allowed * 100:.1f} %)"
        + (f"; fvcore skipped {skipped}" if skipped else "")
    ]


def measure_latency(request: ProfileRequest, limits: Limits) -> dict[str, Any] | None:
    """Calibration-normalised timing rounds, only when a latency limit asks for them."""
    if not limits.wants_latency:
        return None
    from pytest_modelprof.profile import real_model_and_inputs
    from pytest_modelprof.runtime import measure_forward_normalised

    module, inputs = real_model_and_inputs(
        request.model, input_shape=request.input_shape, inputs=request.inputs,
        device=request.device,
    )
    timing = measure_forward_normalised(module, inputs, rounds=limits.timing_rounds)
    data: dict[str, Any] = timing.model_dump(mode="json")
    return data


def _latency_verdict(
    timing: Mapping[str, Any] | None, baseline_timing: Mapping[str, Any] | None, limits: Limits
) -> tuple[list[str], list[str], float | None]:
    """(failures, warnings, current median ms) of the latency limits, judged noise-robustly."""
    if timing is None:
        return [], [], None
    from pytest_modelprof.runtime import (
        DEFAULT_TOLERANCE,
        NormalisedTiming,
        compare_timings,
        latency_gate,
    )

    current = NormalisedTiming.model_validate(timing)
    tolerance = limits.tolerances.get("latency_ms")
    comparison = None
    if baseline_timing is not None and tolerance is not None and not isinstance(tolerance, Ignore):
        fraction = tolerance.fraction if isinstance(tolerance, Relative) else DEFAULT_TOLERANCE
        try:
            comparison = compare_timings(
                current, NormalisedTiming.model_validate(baseline_timing), tolerance=fraction
            )
        except ValueError as exc:
            return [], [f"latency not compared: {exc}"], current.latency_ms
    budget = limits.budgets.get("latency_ms")
    decision = latency_gate(
        comparison,
        latency_ms=current.latency_ms,
        max_latency_ms=budget.limit if budget is not None else None,
        strict=limits.timing_strict,
    )
    if decision.action == "fail":
        return list(decision.reasons), [], current.latency_ms
    if decision.action == "warn":
        hint = "timing_strict=True (or --modelprof-timing-strict) makes this fail"
        return [], [f"{r}; {hint}" for r in decision.reasons], current.latency_ms
    return [], [], current.latency_ms


def growth_failures(
    request: ProfileRequest, sweep_axes: Mapping[str, Sequence[int]] | None, limits: Limits
) -> tuple[list[str], list[str], dict[str, Any] | None]:
    """(failures, warnings, the sweep as JSON) of the growth limits over ``sweep=`` axes."""
    if not sweep_axes or not limits.growth:
        return [], [], None
    from pytest_modelprof.sweep import check_growth, sweep

    result = sweep(
        request.model,
        over=sweep_axes,
        input_shape=request.input_shape,
        inputs=request.inputs,
        latency="max_latency_growth_exponent" in limits.growth,
        device=request.device,
    )
    failures: list[str] = []
    warnings: list[str] = []
    for violation in check_growth(result, dict(limits.growth)):
        # A latency exponent is as noisy as latency itself: it warns unless timing_strict.
        if violation.metric == "latency_ms" and not limits.timing_strict:
            warnings.append(violation.message)
        else:
            failures.append(violation.message)
    swept: dict[str, Any] = result.model_dump(mode="json")
    return failures, warnings, swept


def update_command(nodeids: Sequence[str]) -> str:
    """The shell command that rewrites these tests' baselines."""
    return "pytest --modelprof-update-baselines " + " ".join(shlex.quote(n) for n in nodeids)


def _display(path: Path, rootdir: Path) -> str:
    try:
        return path.relative_to(rootdir).as_posix()
    except ValueError:
        return str(path)


def _failure(
    head: str,
    comparison: Comparison | None,
    extra: Sequence[str],
    footer: str | None,
) -> str:
    lines = [head]
    if comparison is not None:
        for check in comparison.regressions:
            lines.append("  " + check.describe())
        for check in comparison.unmeasured:
            lines.append(
                "  " + check.describe() + "; remove the limit until the metric is measured"
            )
        if comparison.layers and comparison.layer_metric is not None:
            m = comparison.layer_metric
            lines.append(f"  layers that grew most ({m.label}):")
            for d in comparison.layers:
                lines.append(
                    f"    {d.name or '<root>'} ({d.type}): {m.format(d.baseline)} \u2192 "
                    f"{m.format(d.current)} (+{m.format(d.growth)})"
                )
    lines.extend("  " + e for e in extra)
    if footer:
        lines.append(footer)
    return "\n".join(lines)


def evaluate(
    profile: ModelProfile,
    *,
    nodeid: str,
    name: str | None,
    limits: Limits,
    session: SessionSettings,
    rootdir: Path,
    extra_failures: Sequence[str] = (),
    warnings: Sequence[str] = (),
    timing: Mapping[str, Any] | None = None,
    sweep: Mapping[str, Any] | None = None,
) -> Outcome:
    """Judge one profile against its baseline; in update mode, write the baseline first.

    ``timing`` (from :func:`measure_latency`) is stored with the baseline and judged by the
    noise-robust timing comparison, never by the generic relative delta.
    """
    from pytest_modelprof.baseline.document import BaselineDocument
    from pytest_modelprof.results import check_to_json

    rel = baseline_relpath(nodeid, name)
    path = session.baseline_dir / rel
    shown = _display(path, rootdir)
    current = BaselineDocument.from_profile(
        profile, test=nodeid, name=name, settings=limits.describe(), timing=timing
    )
    label = nodeid if name is None else f"{nodeid} (name={name!r})"
    who = f"modelprof: {profile.model} in {label}"

    baseline: BaselineDocument | None = None
    load_error: str | None = None
    try:
        text = read_text(path)
        if text is not None:
            baseline = BaselineDocument.from_json(text, source=shown)
    except BaselineError as exc:
        load_error = str(exc)

    # Measured latency is judged from timing rounds (below), never as a plain relative delta;
    # unmeasured, a latency limit stays in the policy and reports "not measured".
    policy = limits.policy()
    if timing is not None:
        policy = Policy(
            {k: v for k, v in policy.tolerances.items() if k != "latency_ms"},
            {k: v for k, v in policy.budgets.items() if k != "latency_ms"},
            policy.explicit - {"latency_ms"},
        )
    comparison = compare(current, baseline, policy)
    timing_failures, timing_warnings, latency_ms = _latency_verdict(
        timing, baseline.timing if baseline is not None and not session.update else None, limits
    )
    extra_failures = [*extra_failures, *timing_failures]
    measured = {k: float(v) for k, v in current.metrics.items()}
    if latency_ms is not None:
        measured["latency_ms"] = round(latency_ms, 6)

    def record(status: Status, failed: bool) -> GateRecord:
        return GateRecord(
            nodeid=nodeid,
            name=name,
            model=profile.model,
            status=status,
            baseline_path=rel.as_posix(),
            metrics=measured,
            baseline_metrics=(
                {k: float(v) for k, v in baseline.metrics.items()} if baseline else {}
            ),
            failed=failed,
            checks=[check_to_json(c) for c in comparison.checks],
            profile=profile.model_dump(mode="json"),
            baseline=baseline.model_dump(mode="json") if baseline else None,
            warnings=[*warnings, *timing_warnings],
            timing=dict(timing) if timing is not None else None,
            sweep=dict(sweep) if sweep is not None else None,
        )

    # Absolute budgets and limits on unmeasured metrics hold in every mode.
    hard = [
        c for c in comparison.checks
        if c.verdict == "unmeasured" or (c.verdict == "regressed" and c.over_budget)
    ]

    if session.update:
        written = write_atomic(path, current.to_json())
        status: Status = "ok"
        if written:
            status = "new" if baseline is None and load_error is None else "updated"
        if hard or extra_failures:
            only_hard = Comparison(tuple(hard), None, (), comparison.has_baseline)
            message = _failure(
                f"{who} breaks limits that updating the baseline cannot fix "
                f"(baseline {shown} was written anyway):",
                only_hard,
                extra_failures,
                None,
            )
            return Outcome(record(status, True), message, None, comparison)
        return Outcome(record(status, False), None, None, comparison)

    if load_error is not None:
        return Outcome(record("error", True), f"{who}: {load_error}", None, comparison)

    fix = f"If the change is intended, run: {update_command([nodeid])}"
    if baseline is None:
        extra = [c.describe() for c in hard] + list(extra_failures)
        message = (
            f"{who}: no baseline at {shown}.\n"
            + "".join(f"  {e}\n" for e in extra)
            + f"Write it with: {update_command([nodeid])}"
        )
        return Outcome(record("missing", True), message, None, comparison)

    if comparison.regressions or comparison.unmeasured or extra_failures:
        n = len(comparison.regressions) + len(comparison.unmeasured) + len(extra_failures)
        message = _failure(
            f"{who} regressed against {shown} ({n} problem{'s' if n > 1 else ''}):",
            comparison,
            extra_failures,
            fix,
        )
        return Outcome(record("regressed", True), message, None, comparison)

    if comparison.improvements:
        lines = [
            "  " + c.describe().replace("limit", "tolerance") for c in comparison.improvements
        ]
        tighten = f"Lock it in with: {update_command([nodeid])}"
        if session.strict:
            message = (
                f"{who} improved beyond tolerance against {shown} "
                f"(--modelprof-strict keeps baselines tight):\n" + "\n".join(lines) + f"\n{tighten}"
            )
            return Outcome(record("improved", True), message, None, comparison)
        hint = f"{who} improved against {shown}:\n" + "\n".join(lines) + f"\n{tighten}"
        return Outcome(record("improved", False), None, hint, comparison)

    return Outcome(record("ok", False), None, None, comparison)


def summary_lines(records: Sequence[GateRecord]) -> list[str]:
    """The rows of the terminal summary, regressions first."""
    columns = [m for m in METRICS if m.summary]
    ordered = sorted(records, key=lambda r: (STATUS_ORDER.index(r.status), r.label))
    header = ["status", "test"] + [m.label for m in columns]
    rows = [header]
    for r in ordered:
        cells = [r.status, r.label]
        for m in columns:
            value = r.metrics.get(m.name)
            cell = m.format(value)
            before = r.baseline_metrics.get(m.name)
            if value is not None and before is not None and before != value:
                change = (value - before) / abs(before) if before else float("inf")
                cell += f" ({format_change(change)})"
            cells.append(cell)
        rows.append(cells)
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    return [
        "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in rows
    ]
