"""The baseline document: one pydantic model per persisted file, with ``schema_version``.

A baseline holds what a later run needs to judge a profile: the metrics, the per-layer rows for
the layer diff, the settings the gate used and the environment that produced the numbers.
Older schema versions are upgraded on read by the steps in :data:`MIGRATIONS`.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Annotated, Any

from pydantic import Field, ValidationError

from pytest_modelprof._json import MAX_INT, JSONProblem, field_path, load_json
from pytest_modelprof.baseline.metrics import active_metrics, metric_values
from pytest_modelprof.baseline.renames import (
    METRIC_RENAMES,
    SETTING_RENAMES,
    TIMING_VERDICTS,
    TRAFFIC_FIELD,
    renamed,
    renamed_keys,
)
from pytest_modelprof.compile_health import CompileHealth
from pytest_modelprof.errors import BaselineError
from pytest_modelprof.schema import (
    FLOAT_DIGITS,
    Frozen,
    ModelProfile,
    TensorSpec,
    dumps_deterministic,
)

__all__ = [
    "BASELINE_SCHEMA_VERSION",
    "BaselineLayer",
    "BaselineOpFamily",
    "BaselineEnvironment",
    "BaselineDocument",
    "baseline_layers",
    "migrate",
]

BASELINE_SCHEMA_VERSION = 3

Migration = Callable[[dict[str, Any]], dict[str, Any]]

_UPDATE = "`pytest --modelprof-update-baselines`"

_TOTALS = frozenset({"flops", "macs", "params", "traffic", "peak_activations", "intensity"})
#: The metrics every baseline of a schema version holds, by that version, under today's names
#: (the check reads the migrated document): the totals of every profile. A file without one of
#: them lost it (a bad merge, a hand edit) and is refused; other metrics are recorded only where
#: a limit or the engine measures them, or by later releases.
ALWAYS_RECORDED: dict[int, frozenset[str]] = {1: _TOTALS, 2: _TOTALS, 3: _TOTALS}

#: A count in a baseline: a non-negative integer a 64-bit counter can hold.
Count = Annotated[int, Field(ge=0, le=MAX_INT)]


def _v1_to_v2(doc: dict[str, Any]) -> dict[str, Any]:
    """v2 records the uncounted ops and more of the environment; v1 did not know them."""
    out = dict(doc)
    out.setdefault("uncounted_ops", None)  # unknown, so no op can be "newly" uncounted
    return out


def _v2_to_v3(doc: dict[str, Any]) -> dict[str, Any]:
    """v3 names each quantity with one word (``baseline.renames``): metric and setting keys,
    the bytes moved (``traffic``) of layers, op families and uncounted ops, compile time, and
    the collectors' evidence that carries a metric's name."""
    out: dict[str, Any] = renamed(doc, "uncounted_memory", "uncounted_traffic")
    if "metrics" in doc:
        out["metrics"] = renamed_keys(doc["metrics"], METRIC_RENAMES)
    settings = renamed_keys(doc.get("settings"), SETTING_RENAMES)
    if isinstance(settings, dict) and isinstance(settings.get("timing_verdicts"), str):
        verdicts = settings["timing_verdicts"]
        settings["timing_verdicts"] = TIMING_VERDICTS.get(verdicts, verdicts)
    if "settings" in doc:
        out["settings"] = settings
    for key in ("layers", "op_families"):
        if key in doc:
            out[key] = renamed(doc[key], *TRAFFIC_FIELD)
    if "compile" in doc:
        out["compile"] = renamed(doc["compile"], "compile_s", "compile_time")
    measured = doc.get("measured")
    if isinstance(measured, dict):
        llm = measured.get("llm")
        if isinstance(llm, dict) and "growth" in llm:
            llm = {**llm, "growth": renamed(llm["growth"], "kv_cache_bytes", "kv_cache")}
        out["measured"] = {
            **measured,
            **({"llm": llm} if llm is not None else {}),
            **(
                {"predicted": renamed(measured["predicted"], "predicted_ms", "predicted_time")}
                if "predicted" in measured
                else {}
            ),
        }
    return out


#: ``MIGRATIONS[n]`` turns a version-``n`` document (a plain dict) into version ``n + 1``.
MIGRATIONS: dict[int, Migration] = {1: _v1_to_v2, 2: _v2_to_v3}


class BaselineLayer(Frozen):
    """The per-layer numbers the layer diff needs (a module's own ops, not its children)."""

    name: str
    type: str
    flops: Count
    macs: Count
    params: Count
    traffic: Count


class BaselineOpFamily(Frozen):
    """One op family's calls and costs, for the report's baseline-vs-current chart."""

    family: str
    count: Count
    flops: Count
    traffic: Count


class BaselineEnvironment(Frozen):
    """What produced the numbers; only fields that are the same on every worker and OS."""

    torch_version: str
    device: str
    dtype: str
    capture_mode: str
    torchvision_version: str | None = None
    # The package the named model comes from (ultralytics, timm, transformers): "timm 1.0.31".
    source_version: str | None = None
    # The CPU model and its instruction-set flags (/proc/cpuinfo), only in baselines that
    # count instructions: kernels that branch on CPU features execute other instructions.
    cpu: str | None = None
    cpu_flags: str | None = None


class BaselineDocument(Frozen):
    """One committed baseline: the costs of one profiled model in one test."""

    schema_version: int = BASELINE_SCHEMA_VERSION
    test: str  # the node id of the test that owns the baseline
    name: str | None = None  # the ``name=`` that tells several profiles of one test apart
    model: str
    inputs: list[TensorSpec]
    metrics: dict[str, int | float]
    layers: list[BaselineLayer]
    settings: dict[str, str]
    environment: BaselineEnvironment
    # Calibration-normalised timing rounds (runtime.noise.NormalisedTiming as JSON), only for
    # tests with a latency limit. Kept as plain JSON so reading a baseline never needs torch.
    timing: dict[str, Any] | None = None
    # Ops without a cost formula (op -> calls): a new one hides cost, so it fails the gate.
    # ``None`` in documents migrated from v1, which did not record them.
    uncounted_ops: dict[str, Count] | None = None
    # Bytes each uncounted op moved (op -> bytes), compared like its calls. Left out of the file
    # when no op is uncounted (older files lack it: their bytes are unknown, not zero).
    uncounted_traffic: dict[str, Count] | None = None
    # torch.compile health, only for tests with a compile limit: the breaks a later run names
    # as new. Left out of the file when absent, so other baselines do not change.
    compile: CompileHealth | None = None
    # Calls of each op per layer (layer -> op -> calls), so a report can name the op whose
    # count changed, and the op families. ``None`` in files written before they were recorded.
    op_calls: dict[str, dict[str, Count]] | None = None
    op_families: list[BaselineOpFamily] | None = None
    # The evidence of collectors that keep it here (collector name -> JSON), for the metrics a
    # collector measures (baseline.collector). Left out of the file when there is none.
    measured: dict[str, dict[str, Any]] | None = None

    def evidence(self) -> dict[str, Any]:
        """The collectors' evidence this baseline keeps, by collector key (JSON)."""
        out: dict[str, Any] = dict(self.measured or {})
        if self.timing is not None:
            out["timing"] = self.timing
        if self.compile is not None:
            out["compile"] = self.compile.model_dump(mode="json")
        return out

    @classmethod
    def from_profile(
        cls,
        profile: ModelProfile,
        *,
        test: str,
        name: str | None,
        settings: Mapping[str, str],
        timing: Mapping[str, Any] | None = None,
        values: Mapping[str, int | float] | None = None,
        evidence: Mapping[str, Mapping[str, Any]] | None = None,
        facts: Mapping[str, str] | None = None,
    ) -> BaselineDocument:
        """The baseline a profile would write; also the "current" side of a comparison.

        ``values`` (metric name -> value) are the collectors' metrics; ``evidence`` (collector
        key -> JSON) is what the collectors keep, in ``measured`` (timing rounds, which older
        files held, in ``timing``); ``facts`` are the environment fields a measurement
        recorded (the CPU that counted instructions)."""
        figures = {
            k: round(v, FLOAT_DIGITS) if isinstance(v, float) else v
            for k, v in metric_values(profile, values).items()
        }
        kept = {key: dict(data) for key, data in (evidence or {}).items()}
        timing = timing if timing is not None else kept.pop("timing", None)
        kept.pop("timing", None)
        return cls(
            test=test,
            name=name,
            model=profile.model,
            inputs=list(profile.inputs),
            metrics=figures,
            layers=baseline_layers(profile),
            settings=dict(sorted(settings.items())),
            environment=BaselineEnvironment(
                torch_version=profile.environment.torch_version,
                device=profile.environment.device,
                dtype=profile.environment.dtype,
                capture_mode=profile.capture.mode,
                torchvision_version=_version("torchvision"),
                source_version=_source_version(profile.model),
                **(facts or {}),
            ),
            timing=dict(timing) if timing is not None else None,
            uncounted_ops={u.op: u.count for u in sorted(profile.uncounted_ops, key=_op)},
            uncounted_traffic={u.op: u.traffic for u in sorted(profile.uncounted_ops, key=_op)}
            or None,
            compile=profile.compile_health,
            measured=dict(sorted(kept.items())) or None,
            **_ops(profile),
        )

    def to_json(self) -> str:
        """Deterministic JSON: sorted keys, fixed float rounding, indent 2, trailing newline."""
        data = self.model_dump(mode="json")
        if data.get("compile") is None:
            data.pop("compile", None)
        for key in ("cpu", "cpu_flags"):  # only baselines that count instructions have them
            if data["environment"].get(key) is None:
                data["environment"].pop(key, None)
        if data.get("uncounted_traffic") is None:
            data.pop("uncounted_traffic", None)
        # Absent in files written before them (and ``measured`` in files that need none).
        for optional in ("op_calls", "op_families", "measured"):
            if data.get(optional) is None:
                data.pop(optional, None)
        return dumps_deterministic(data)

    @classmethod
    def from_json(
        cls, text: str, *, source: str = "<string>", complete: bool = True
    ) -> BaselineDocument:
        """Parse, migrate and validate; failures are :class:`BaselineError` naming ``source``.

        Strict: a figure is a number of its own type in the file (``true`` and ``"2640"`` are
        refused, not converted), finite, and a metric that counts is a non-negative integer.
        With ``complete``, a file that lacks a metric its schema version always records is
        refused as incomplete."""
        try:
            data = load_json(text)
        except json.JSONDecodeError as exc:
            raise BaselineError(_corrupt(source, f"not valid JSON: {exc}")) from None
        except JSONProblem as exc:
            raise BaselineError(_corrupt(source, str(exc))) from None
        written = data.get("schema_version") if isinstance(data, dict) else None
        data = migrate(data, source=source)  # refuses a version that is no integer
        recorded = written if isinstance(written, int) else BASELINE_SCHEMA_VERSION
        figures = _metric_problems(data.get("metrics"))
        problems = list(figures.values())
        doc: BaselineDocument | None = None
        try:
            doc = cls.model_validate(data, strict=True)
        except ValidationError as exc:
            problems += [
                f"{field_path(err['loc']) or '<root>'}: {err['msg']}"
                for err in exc.errors()
                if err["loc"][:1] != ("metrics",) or err["loc"][1:2] not in [(n,) for n in figures]
            ]
        if problems or doc is None:
            raise BaselineError(_corrupt(source, "; ".join(problems)))
        lacking = sorted(ALWAYS_RECORDED.get(recorded, frozenset()) - doc.metrics.keys())
        if complete and lacking:
            raise BaselineError(
                f"{source}: incomplete baseline (metrics lack {', '.join(lacking)}, which every "
                f"schema_version {recorded} baseline records; a merge or a hand edit lost "
                f"them). Run {_UPDATE} to record it again."
            )
        return doc


def _corrupt(source: str, why: str) -> str:
    return f"{source}: corrupt baseline ({why}). Delete it and run {_UPDATE} to write it again."


def _metric_problems(metrics: Any) -> dict[str, str]:
    """``metrics.flops: ...`` by metric, for each figure that is no number, or no count where
    the metric counts (the type is checked as the file has it: nothing is converted)."""
    if not isinstance(metrics, dict):
        return {}  # the document's validation says what is wrong
    table = active_metrics()
    problems = {}
    for name, value in metrics.items():
        shown = json.dumps(value)
        shown = shown if len(shown) <= 40 else shown[:37] + "..."
        metric = table.by_name(name)
        number = isinstance(value, (int, float)) and not isinstance(value, bool)
        if metric is not None and metric.integer:
            if not (number and isinstance(value, int) and value >= 0):
                problems[name] = (
                    f"metrics.{name}: expected a count (a non-negative integer), got {shown}"
                )
        elif not number:
            problems[name] = f"metrics.{name}: expected a number, got {shown}"
    return problems


def baseline_layers(profile: ModelProfile) -> list[BaselineLayer]:
    """The profile's layers as a baseline stores them, by name: the current side of a diff."""
    rows: dict[str, BaselineLayer] = {}
    for layer in profile.layers:  # a module may appear twice (shared modules): sum it
        prev = rows.get(layer.name)
        rows[layer.name] = BaselineLayer(
            name=layer.name,
            type=layer.type,
            flops=layer.flops + (prev.flops if prev else 0),
            macs=layer.macs + (prev.macs if prev else 0),
            params=max(layer.params, prev.params if prev else 0),
            traffic=layer.traffic + (prev.traffic if prev else 0),
        )
    return sorted(rows.values(), key=lambda r: r.name)


def _ops(profile: ModelProfile) -> dict[str, Any]:
    """The op calls and families of a profile; none from a profile that did not record them
    (op calls: one loaded from an older file), so nothing is compared against a made-up zero."""
    out: dict[str, Any] = {}
    if profile.op_calls:
        calls: dict[str, dict[str, int]] = {}
        for row in profile.op_calls:
            calls.setdefault(row.module, {})[row.op] = row.count
        out["op_calls"] = calls
    if profile.op_breakdown:
        out["op_families"] = [
            BaselineOpFamily(family=f.family, count=f.count, flops=f.flops, traffic=f.traffic)
            for f in sorted(profile.op_breakdown, key=lambda f: f.family)
        ]
    return out


def _op(op: Any) -> str:
    return str(op.op)


def _version(package: str) -> str | None:
    """An installed distribution's version, without importing it."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(package)
    except PackageNotFoundError:
        return None


def _source_version(model: str) -> str | None:
    """``"ultralytics 8.3.1"`` for a model that comes from that package, else ``None``."""
    if model.endswith((".yaml", ".yml", ".pt")):
        package = "ultralytics"
    elif model.startswith("timm:"):
        package = "timm"
    elif model.startswith("hf:"):
        package = "transformers"
    else:
        return None
    found = _version(package)
    return f"{package} {found}" if found else None


def migrate(
    data: Any,
    *,
    source: str,
    migrations: Mapping[int, Migration] = MIGRATIONS,
    current: int = BASELINE_SCHEMA_VERSION,
) -> dict[str, Any]:
    """Upgrade a raw document step by step to ``current``; refuse newer or unknown versions."""
    if not isinstance(data, dict):
        raise BaselineError(
            f"{source}: corrupt baseline (expected a JSON object, got {type(data).__name__}). "
            f"Delete it and run `pytest --modelprof-update-baselines` to write it again."
        )
    doc: dict[str, Any] = dict(data)
    version = doc.get("schema_version")
    if isinstance(version, bool) or not isinstance(version, int):
        raise BaselineError(
            f"{source}: corrupt baseline (schema_version is {version!r}, expected an integer). "
            f"Delete it and run `pytest --modelprof-update-baselines` to write it again."
        )
    if version > current:
        raise BaselineError(
            f"{source}: baseline schema_version {version} is newer than this pytest-modelprof "
            f"understands (up to {current}). Upgrade pytest-modelprof, or rewrite the baseline "
            f"with `pytest --modelprof-update-baselines`."
        )
    while version < current:
        step = migrations.get(version)
        if step is None:
            raise BaselineError(
                f"{source}: baseline schema_version {version} is not supported (no migration to "
                f"{version + 1}). Run `pytest --modelprof-update-baselines` to write it again."
            )
        doc = dict(step(doc))
        version += 1
        doc["schema_version"] = version
    return doc
