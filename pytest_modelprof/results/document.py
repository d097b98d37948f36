"""The JSON results document: every gated profile of a run, its comparison and its verdict.

:class:`RunResults` is what ``--modelprof-json`` writes, what ``modelprof merge`` joins across
CI shards and what ``modelprof report`` re-renders. Its JSON Schema is committed at
``schemas/results.schema.json``; regenerate it with ``python -m pytest_modelprof.results.document``.

Like every persisted document it is a frozen pydantic model with ``schema_version``, written
deterministically (sorted keys, rounded floats, indent 2, trailing newline).
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any, Final, Literal, TypeVar

from pydantic import BaseModel, ValidationError

from pytest_modelprof._json import JSONProblem, load_json
from pytest_modelprof._version import __version__
from pytest_modelprof.baseline.document import BaselineDocument, baseline_layers, migrate
from pytest_modelprof.baseline.layers import layer_detail, layer_row_metric
from pytest_modelprof.baseline.metrics import Metric, active_metrics
from pytest_modelprof.baseline.renames import (
    GROWTH_ROW_RENAMES,
    METRIC_RENAMES,
    TRAFFIC_FIELD,
    renamed,
)
from pytest_modelprof.baseline.renames import renamed_keys as keys
from pytest_modelprof.errors import BaselineError, ReportError
from pytest_modelprof.results.record import (
    STATUS_ORDER,
    ProfileResult,
    SourceLocation,
    Status,
)
from pytest_modelprof.schema import Frozen, ModelProfile, dumps_deterministic, migrate_profile

__all__ = [
    "RESULTS_KIND",
    "RunInfo",
    "RunResults",
    "Document",
    "collect_run_info",
    "results_from_records",
    "load_document",
]

RESULTS_SCHEMA_VERSION: Final = 5
RESULTS_KIND: Final = "pytest-modelprof-results"
#: Where the committed JSON Schema lives, relative to the repository root.
SCHEMA_PATH: Final = "schemas/results.schema.json"


class RunInfo(Frozen):
    """Where and when the run happened; every field is optional except the tool versions."""

    started: datetime | None = None
    finished: datetime | None = None
    commit: str | None = None
    ref: str | None = None
    repository_url: str | None = None
    run_url: str | None = None
    artifact_url: str | None = None
    torch_version: str | None = None
    device: str | None = None
    python_version: str = platform.python_version()
    platform: str = sys.platform
    modelprof_version: str = __version__
    exit_status: int | None = None
    shards: int = 1


class RunResults(Frozen):
    """The results of one pytest run (or of several shards merged)."""

    schema_version: int = RESULTS_SCHEMA_VERSION
    kind: Literal["pytest-modelprof-results"] = RESULTS_KIND
    run: RunInfo = RunInfo()
    tests: list[ProfileResult] = []

    def ordered(self) -> list[ProfileResult]:
        """Regressions first, then missing, error, warning, improved, updated, new, ok."""
        return sorted(self.tests, key=lambda t: (STATUS_ORDER.index(t.status), t.label))

    def counts(self) -> dict[Status, int]:
        """How many profiles have each status, in summary order (zero counts left out)."""
        out: dict[Status, int] = {}
        for status in STATUS_ORDER:
            n = sum(1 for t in self.tests if t.status == status)
            if n:
                out[status] = n
        return out

    def to_json(self) -> str:
        """Deterministic JSON: sorted keys, fixed float rounding, indent 2, trailing newline."""
        return dumps_deterministic(self.model_dump(mode="json"))

    @classmethod
    def from_json(cls, text: str, *, source: str = "<string>") -> RunResults:
        """Parse and validate; failures are :class:`ReportError` naming ``source`` and the field."""
        data = _load_json(text, source)
        return _validate(cls, data, source)


Document = ModelProfile | RunResults | BaselineDocument


def _load_json(text: str, source: str) -> Any:
    try:
        # Any float the gate wrote is fine here (a report shows it); the nesting and the
        # integers are checked before anything recurses over the data.
        return load_json(text, finite=False)
    except json.JSONDecodeError as exc:
        raise ReportError(f"{source}: not valid JSON ({exc})") from None
    except JSONProblem as exc:
        raise ReportError(f"{source}: {exc}") from None


_M = TypeVar("_M", bound=BaseModel)


def _validate(cls: type[_M], data: Any, source: str) -> _M:
    if isinstance(data, dict) and cls is RunResults:
        version = data.get("schema_version")
        if isinstance(version, int) and version > RESULTS_SCHEMA_VERSION:
            raise ReportError(
                f"{source}: results schema_version {version} is newer than this "
                f"pytest-modelprof understands (up to {RESULTS_SCHEMA_VERSION}); upgrade it"
            )
    if isinstance(data, dict) and cls is RunResults:
        data = _migrate(data)
    if cls is ModelProfile:
        data = migrate_profile(data)
    try:
        return cls.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc']) or '<root>'}: {err['msg']}"
            for err in exc.errors()[:5]
        )
        more = len(exc.errors()) - 5
        suffix = f" (and {more} more)" if more > 0 else ""
        raise ReportError(f"{source}: not a valid {cls.__name__} ({problems}{suffix})") from None


def _results_v2_to_v3(data: dict[str, Any]) -> dict[str, Any]:
    """v3 holds the gate's one record type, which adds each test's ``metrics`` and
    ``baseline_metrics`` (empty when not known), and the judge's row type: same fields."""
    return {**data, "schema_version": 3}


def _with_layer_changes(test: Any) -> Any:
    """One test of a v3 file with the judge's layer changes on its FLOPs row, from the profile
    and the baseline the file holds (a test with either missing has none to show)."""
    name = layer_row_metric()
    if not isinstance(test, dict) or not test.get("profile") or not test.get("baseline"):
        return test
    try:
        profile = ModelProfile.model_validate(migrate_profile(test["profile"]))
        baseline = BaselineDocument.model_validate(migrate(test["baseline"], source="results"))
    except (ValidationError, BaselineError):
        return test  # validating the whole document names the bad field
    detail = layer_detail(baseline_layers(profile), baseline.layers)
    checks = [
        {**c, "detail": {**(c.get("detail") or {}), **detail}}
        if isinstance(c, dict) and c.get("metric") == name else c
        for c in test.get("checks") or []
    ]
    return {**test, "checks": checks}


def _results_v3_to_v4(data: dict[str, Any]) -> dict[str, Any]:
    """v4 rows carry every changed layer on the FLOPs row (``detail["layer_changes"]``), which
    the reports read instead of diffing the profile and the baseline themselves."""
    tests = data.get("tests")
    tests = [_with_layer_changes(t) for t in tests] if isinstance(tests, list) else tests
    return {**data, "schema_version": 4, "tests": tests}


def _renamed_test(test: Any) -> Any:
    """One test of a v4 file under the quantity names of v5 (``baseline.renames``)."""
    if not isinstance(test, dict):
        return test
    out = dict(test)
    for key in ("metrics", "baseline_metrics"):
        if key in test:
            out[key] = keys(test[key], METRIC_RENAMES)
    out["checks"] = [_renamed_row(row) for row in test.get("checks") or []]
    if "profile" in test:
        out["profile"] = migrate_profile(test["profile"])
    if isinstance(test.get("baseline"), dict):
        try:
            out["baseline"] = migrate(test["baseline"], source="results")
        except BaselineError:
            pass  # validating the whole document names the bad field
    sweep = test.get("sweep")
    if isinstance(sweep, dict) and isinstance(sweep.get("series"), list):
        series = [
            {**s, "points": renamed(s.get("points"), *TRAFFIC_FIELD),
             "fits": renamed(s.get("fits"), *TRAFFIC_FIELD)} if isinstance(s, dict) else s
            for s in sweep["series"]
        ]
        out["sweep"] = {**sweep, "series": series}
    return out


def _renamed_row(row: Any) -> Any:
    """One check row of a v4 file under the metric names of v5: its metric and label, the
    growth rows' names and the layer changes' bytes moved."""
    name = row.get("metric") if isinstance(row, dict) else None
    if not isinstance(name, str):
        return row
    field, growth, axis = name.partition("_growth[")
    if growth and field in GROWTH_ROW_RENAMES:
        row = {**row, "metric": f"{GROWTH_ROW_RENAMES[field]}{growth}{axis}"}
    elif name in METRIC_RENAMES:
        metric = active_metrics().by_name(METRIC_RENAMES[name])
        new = METRIC_RENAMES[name]
        row = {**row, "metric": new, "label": metric.label if metric is not None else new}
    detail = row.get("detail")
    if isinstance(detail, dict) and isinstance(detail.get("layer_changes"), list):
        changes = [
            {k: renamed(v, *TRAFFIC_FIELD) if k in ("before", "after") else v
             for k, v in c.items()} if isinstance(c, dict) else c
            for c in detail["layer_changes"]
        ]
        row = {**row, "detail": {**detail, "layer_changes": changes}}
    return row


def _results_v4_to_v5(data: dict[str, Any]) -> dict[str, Any]:
    """v5 names each quantity with one word: metric names in rows and ``metrics``, and the
    bytes moved (``traffic``) in the profiles, baselines and sweeps it holds."""
    tests = data.get("tests")
    tests = [_renamed_test(t) for t in tests] if isinstance(tests, list) else tests
    return {**data, "schema_version": 5, "tests": tests}


def _migrate(data: dict[str, Any]) -> dict[str, Any]:
    """``data`` brought up to :data:`RESULTS_SCHEMA_VERSION`, one step at a time."""
    steps = {
        1: _results_v1_to_v2, 2: _results_v2_to_v3, 3: _results_v3_to_v4, 4: _results_v4_to_v5,
    }
    while isinstance(version := data.get("schema_version"), int) and version in steps:
        data = steps[version](data)
    return data


def _results_v1_to_v2(data: dict[str, Any]) -> dict[str, Any]:
    """v1 rows held a metric name, numbers and a limit; v2 rows carry their texts and reason."""
    tests = []
    for test in data.get("tests", []):
        rows = []
        for old in test.get("checks", []):
            # Formatted as the metric's row is today (v5 renames the row itself).
            name = old.get("metric", "")
            metric = active_metrics().by_name(METRIC_RENAMES.get(name, name))
            label = metric.label if metric is not None else old.get("metric", "")

            def fmt(value: float | None, metric: Metric | None = metric) -> str:
                if value is None:
                    return "\u2013"
                return metric.format(value) if metric is not None else f"{value:g}"

            rows.append({
                "metric": old.get("metric", ""),
                "label": label,
                "kind": "budget" if old.get("over_budget") else "delta",
                "verdict": old.get("verdict", "ok"),
                "reason": f"{fmt(old.get('baseline'))} \u2192 {fmt(old.get('current'))}, "
                          f"limit {old.get('limit', '')}",
                "current": old.get("current"),
                "baseline": old.get("baseline"),
                "limit": old.get("limit", ""),
                "current_text": fmt(old.get("current")),
                "baseline_text": fmt(old.get("baseline")),
                "summary": bool(metric.summary) if metric is not None else False,
            })
        tests.append({**test, "checks": rows})
    return {**data, "schema_version": 2, "tests": tests}


def load_document(path: str | os.PathLike[str]) -> Document:
    """Read a results file, a profile (``modelprof profile -o x.json``) or a baseline file."""
    source = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise ReportError(f"{source}: cannot read ({exc.strerror or exc})") from None
    data = _load_json(text, source)
    if not isinstance(data, dict):
        raise ReportError(f"{source}: expected a JSON object, got {type(data).__name__}")
    if data.get("kind") == RESULTS_KIND:
        return _validate(RunResults, data, source)
    if "capture" in data and "layers" in data:
        return _validate(ModelProfile, data, source)
    if "test" in data and "metrics" in data:
        return BaselineDocument.from_json(text, source=source)
    raise ReportError(
        f"{source}: not a modelprof document; expected a results file (--modelprof-json), "
        f"a profile (modelprof profile -o x.json) or a baseline file"
    )


def _git(rootdir: Path, *args: str) -> str | None:
    try:
        done = subprocess.run(
            ["git", *args],
            cwd=rootdir,
            capture_output=True,
            text=True,
            timeout=5,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    out = done.stdout.strip()
    return out if done.returncode == 0 and out else None


def collect_run_info(
    *,
    rootdir: Path,
    env: Mapping[str, str],
    started: datetime | None,
    finished: datetime | None,
    profiles: Iterable[ModelProfile],
    artifact_url: str | None = None,
    exit_status: int | None = None,
) -> RunInfo:
    """The run's facts: commit (``GITHUB_SHA`` or ``git rev-parse``), CI links, torch, device."""
    commit = env.get("GITHUB_SHA") or _git(rootdir, "rev-parse", "HEAD")
    ref = env.get("GITHUB_HEAD_REF") or env.get("GITHUB_REF_NAME")
    if not ref:
        ref = _git(rootdir, "rev-parse", "--abbrev-ref", "HEAD")
    server, repo, run_id = (
        env.get("GITHUB_SERVER_URL"),
        env.get("GITHUB_REPOSITORY"),
        env.get("GITHUB_RUN_ID"),
    )
    repository_url = f"{server}/{repo}" if server and repo else None
    run_url = f"{repository_url}/actions/runs/{run_id}" if repository_url and run_id else None
    artifact = artifact_url or env.get("MODELPROF_ARTIFACT_URL") or None
    if artifact is None and run_url is not None:
        artifact = f"{run_url}#artifacts"
    torch_versions = sorted({p.environment.torch_version for p in profiles})
    devices = sorted({p.environment.device for p in profiles})
    return RunInfo(
        started=started,
        finished=finished,
        commit=commit,
        ref=ref if ref != "HEAD" else None,
        repository_url=repository_url,
        run_url=run_url,
        artifact_url=artifact,
        torch_version=", ".join(torch_versions) or None,
        device=", ".join(devices) or None,
        exit_status=exit_status,
    )


def results_from_records(
    records: Iterable[ProfileResult],
    locations: Mapping[str, SourceLocation],
    run: RunInfo,
) -> RunResults:
    """The results document of a pytest run, from the gate's records (one per profile)."""
    tests = [
        r.model_copy(update={"location": locations[r.nodeid]}) if r.nodeid in locations else r
        for r in records
    ]
    return RunResults(run=run, tests=tests)


def results_json_schema() -> str:
    """The JSON Schema of :class:`RunResults`, as committed at :data:`SCHEMA_PATH`."""
    schema = RunResults.model_json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["$id"] = "https://github.com/pytest-modelprof/pytest-modelprof/" + SCHEMA_PATH
    return json.dumps(schema, sort_keys=True, indent=2, ensure_ascii=False) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m pytest_modelprof.results.document [PATH]``: write the JSON Schema (or print
    it)."""
    args = list(sys.argv[1:] if argv is None else argv)
    text = results_json_schema()
    if args:
        Path(args[0]).parent.mkdir(parents=True, exist_ok=True)
        Path(args[0]).write_text(text, encoding="utf-8")
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
