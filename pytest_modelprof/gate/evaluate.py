"""The regression gate without pytest: judge one profile's evidence, decide, write the baseline.

The plugin calls :func:`evaluate` once per profile registered in a test and turns the
:class:`Outcome` into one ``pytest.fail``. Every reason for a verdict is a check row
(:mod:`pytest_modelprof.baseline.compare`); the failure text lists the failed rows, and the
record carries all rows to every report.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pytest_modelprof.baseline.check import Check
from pytest_modelprof.baseline.collector import Collector, EvidenceData
from pytest_modelprof.baseline.compare import Comparison, grown_layer_text
from pytest_modelprof.baseline.document import BaselineDocument
from pytest_modelprof.baseline.ops import op_change_text, op_sites
from pytest_modelprof.baseline.store import (
    BaselinePaths,
    baseline_relpath,
    read_text,
    write_atomic,
)
from pytest_modelprof.errors import BaselineError
from pytest_modelprof.gate.collect import BUILTIN_COLLECTORS, collect, measured_values
from pytest_modelprof.gate.judge import Evidence, judge
from pytest_modelprof.gate.limits import Limits
from pytest_modelprof.gate.request import ProfileRequest
from pytest_modelprof.gate.settings import SessionSettings
from pytest_modelprof.results.record import ProfileResult, Status
from pytest_modelprof.schema import describe_inputs

if TYPE_CHECKING:
    from pytest_modelprof.schema import ModelProfile

__all__ = [
    "gate_profile",
    "update_command",
]


@dataclass(frozen=True)
class Outcome:
    """What the plugin does with one profile: the record, and a failure or a hint to print."""

    record: ProfileResult
    failure: str | None = None
    hint: str | None = None
    comparison: Comparison | None = None


def update_command(nodeids: Sequence[str]) -> str:
    """The shell command that rewrites these tests' baselines."""
    return "pytest --modelprof-update-baselines " + " ".join(shlex.quote(n) for n in nodeids)


def _display(path: Path, rootdir: Path) -> str:
    try:
        return path.relative_to(rootdir).as_posix()
    except ValueError:
        return str(path)


def _row_lines(check: Check) -> list[str]:
    """A failed row and, for the kinds that have one, its detail (layers that grew, ops whose
    calls changed)."""
    lines = ["  " + check.describe()]
    layers = check.detail.get("layers") if check.detail else None
    if layers:
        lines.append(f"  layers that grew most ({check.label}):")
        lines += [f"    {grown_layer_text(d)}" for d in layers]
    ops = check.detail.get("op_changes") if check.detail else None
    if ops:
        lines.append("  ops whose calls changed (baseline \u2192 current):")
        for d in ops:
            text = op_change_text(d)
            head, at, where = text.partition(" at ")
            # A long layer path and its lines: the lines go under it, so it fits 100 columns.
            lines += [f"    {head}", f"      at {where}"] if at and len(text) > 96 else [
                f"    {text}"
            ]
        if check.detail.get("op_changes_more"):
            lines.append(f"    and {check.detail['op_changes_more']} more")
    return lines


def failure_text(
    head: str, rows: Sequence[Check], footer: str | None = None, cause: Sequence[str] = ()
) -> str:
    """The one message of a failed gate: a head line, what changed outside the model (the
    inputs, the environment: ``cause``) first, one line per failed row, a footer."""
    lines = [head, *cause]
    for row in rows:
        lines += _row_lines(row)
    if footer:
        lines.append(footer)
    return "\n".join(lines)


def _test_changes(current: BaselineDocument, baseline: BaselineDocument | None) -> list[str]:
    """``"inputs changed: 1x3x224x224 -> 1x3x256x256"``, ``"dtype changed: float32 -> float64"``:
    what the test itself changed since the baseline, which explains the count deltas below it
    (they are judged by the limits all the same: the environment lets nothing off for them)."""
    if baseline is None:
        return []

    out = []
    before, after = describe_inputs(baseline.inputs), describe_inputs(current.inputs)
    if before != after:
        out.append(f"inputs changed: {before} \u2192 {after}")
    old, new = baseline.environment.dtype, current.environment.dtype
    if old != new:
        out.append(f"dtype changed: {old} \u2192 {new}")
    return out


def _load(path: Path, shown: str) -> tuple[BaselineDocument | None, str | None]:
    """The stored baseline (``None`` when absent) or why it cannot be read."""
    try:
        text = read_text(path)
        return (BaselineDocument.from_json(text, source=shown) if text is not None else None), None
    except BaselineError as exc:
        return None, str(exc)


def _holder(baseline: BaselineDocument | None, nodeid: str, name: str | None) -> str | None:
    """Whose baseline the file holds, when it is another test's (or another ``name=``'s) whose
    usual path is this one's: a file older versions wrote for both, or one file where case is
    ignored. A file moved here by hand (a renamed test) is this test's."""
    if baseline is None or (baseline.test, baseline.name) == (nodeid, name):
        return None
    try:
        theirs = baseline_relpath(baseline.test, baseline.name)
    except BaselineError:
        return None
    if theirs.as_posix().lower() != baseline_relpath(nodeid, name).as_posix().lower():
        return None
    return baseline.test if baseline.name is None else f"{baseline.test} (name={baseline.name!r})"


def _shared_path(
    nodeid: str, name: str | None, paths: BaselinePaths, session: SessionSettings, rootdir: Path
) -> str:
    """Why a test that meets another has a path of its own (for its "no baseline" failure)."""
    usual = session.baseline_dir / baseline_relpath(nodeid, name)
    shown = _display(usual, rootdir)
    baseline, _ = _load(usual, shown)
    held = ""
    if baseline is not None and baseline.test == nodeid:
        held = " (it holds this test's baseline)"
    elif baseline is not None:
        held = f" (it holds the baseline of {baseline.test})"
    return (
        f"its usual path {shown}{held} is also the path of {', '.join(paths.met(nodeid))}, and "
        "two tests never share a baseline file"
    )


@dataclass(frozen=True)
class StoredBaseline:
    """The one read of a profile's baseline: where it is, the document, or why it has none."""

    rel: Path  # the path under the baseline directory (another test's file moves it apart)
    path: Path
    shown: str  # the path as messages name it
    document: BaselineDocument | None
    error: str | None = None


def load_baseline(
    nodeid: str,
    name: str | None,
    session: SessionSettings,
    rootdir: Path,
    paths: BaselinePaths | None = None,
) -> StoredBaseline:
    """Read and parse the profile's baseline once. A file that holds another test's baseline is
    not this one's: a check says so (the error), an update writes beside it."""
    paths = paths or BaselinePaths(session.baseline_dir)
    rel = paths.relpath(nodeid, name)
    path = session.baseline_dir / rel
    shown = _display(path, rootdir)
    baseline, load_error = _load(path, shown)
    holder = _holder(baseline, nodeid, name)
    if holder is not None and session.update:  # never overwrite another test's baseline
        rel = baseline_relpath(nodeid, name, apart=True)
        path = session.baseline_dir / rel
        shown = _display(path, rootdir)
        baseline, load_error = _load(path, shown)
    elif holder is not None:
        baseline = None
        load_error = (
            f"{shown} holds the baseline of {holder}, another test whose path is this test's; "
            f"two tests never share a baseline file. Record this test's own with: "
            f"{update_command([nodeid])}"
        )
    return StoredBaseline(rel, path, shown, baseline, load_error)


def _document(
    profile: ModelProfile,
    evidence: Mapping[str, Any],
    collectors: Mapping[str, Collector[Any]],
    *,
    test: str,
    name: str | None,
    settings: Mapping[str, str],
) -> BaselineDocument:
    """The profile as a baseline stores it, with what each collector keeps of its evidence."""
    kept: dict[str, EvidenceData] = {}
    facts: dict[str, str] = {}
    for key, found in evidence.items():
        data = collectors[key].stored(found)
        if data is not None:
            kept[key] = data
        facts.update(collectors[key].facts(found))
    return BaselineDocument.from_profile(
        profile, test=test, name=name, settings=settings,
        values=measured_values(evidence, collectors), evidence=kept, facts=facts,
    )


def evaluate(
    profile: ModelProfile,
    *,
    nodeid: str,
    name: str | None,
    limits: Limits,
    session: SessionSettings,
    rootdir: Path,
    evidence: Mapping[str, Any] | None = None,
    collectors: Mapping[str, Collector[Any]] = BUILTIN_COLLECTORS,
    stored: StoredBaseline | None = None,
    paths: BaselinePaths | None = None,
) -> Outcome:
    """Judge one profile against its baseline; in update mode, write the baseline first.

    ``evidence`` is what the collectors measured, by collector key
    (:func:`pytest_modelprof.gate.collect.collect`); each of ``collectors`` says what its
    evidence gives (values, rows, what the baseline keeps). ``stored`` is the baseline as
    :func:`load_baseline` read it (read here when not given). ``paths`` says where the run's
    baselines are (:class:`BaselinePaths`; by default every test has its usual path).
    """
    paths = paths or BaselinePaths(session.baseline_dir)
    stored = stored or load_baseline(nodeid, name, session, rootdir, paths)
    found = dict(evidence or {})
    for key, each in found.items():
        profile = collectors[key].on_profile(profile, each)
    settings = limits.describe()
    current = _document(profile, found, collectors, test=nodeid, name=name, settings=settings)
    label = nodeid if name is None else f"{nodeid} (name={name!r})"
    who = f"modelprof: {profile.model} in {label}"
    rel, path, shown = stored.rel, stored.path, stored.shown
    baseline, load_error = stored.document, stored.error

    measured = Evidence(current, found, op_sites=op_sites(profile.op_calls))
    comparison = judge(
        measured, baseline, limits, collectors, fail_on_environment=session.fail_on_environment
    )
    recorded: dict[str, Any] = {}
    for key, each in found.items():
        recorded.update(collectors[key].on_record(each))
    env = list(comparison.environment)
    env_line = (
        f"  the baseline was recorded in another environment: {'; '.join(env)}" if env else None
    )
    # What changed outside the model comes first: it explains every row below it.
    notes = [f"  {n}" for n in _test_changes(current, baseline)] + ([env_line] if env_line else [])

    def record(
        status: Status, failed: bool, failures: Sequence[Check], error: str | None = None
    ) -> ProfileResult:
        figures = {k: float(v) for k, v in current.metrics.items()}
        latency = next((c for c in comparison.checks if c.kind == "latency"), None)
        if latency is not None and latency.current is not None:
            figures["latency"] = round(latency.current, 6)
        return ProfileResult(
            nodeid=nodeid,
            name=name,
            model=profile.model,
            status=status,
            baseline_path=rel.as_posix(),
            metrics=figures,
            baseline_metrics=(
                {k: float(v) for k, v in baseline.metrics.items()} if baseline else {}
            ),
            failed=failed,
            checks=list(comparison.checks),
            profile=profile,
            baseline=baseline,
            warnings=[c.describe() for c in comparison.warnings],
            failures=[c.describe() for c in failures] + ([error] if error else []),
            environment=env,
            **recorded,
        )

    # Limits that rewriting the baseline cannot fix hold in every mode.
    hard = [c for c in comparison.failures if c.hard]

    if session.update:
        before = baseline.evidence() if baseline is not None else {}
        kept = {k: collectors[k].kept(before.get(k), each, limits) for k, each in found.items()}
        rewrite = _document(profile, kept, collectors, test=nodeid, name=name, settings=settings)
        written = write_atomic(path, rewrite.to_json())
        status: Status = "ok"
        if written:
            status = "new" if baseline is None and load_error is None else "updated"
        if hard:
            message = failure_text(
                f"{who} breaks limits that updating the baseline cannot fix "
                f"(baseline {shown} was written anyway):",
                hard,
            )
            return Outcome(record(status, True, hard), message, None, comparison)
        return Outcome(record(status, False, ()), None, None, comparison)

    if load_error is not None:
        message = f"{who}: {load_error}"  # the reason travels to every report
        return Outcome(record("error", True, (), message), message, None, comparison)

    if baseline is None:
        shared = _shared_path(nodeid, name, paths, session, rootdir) if paths.met(nodeid) else None
        message = failure_text(
            f"{who}: no baseline at {shown}" + (f"; {shared}." if shared else "."),
            hard,
            f"Write it with: {update_command([nodeid])}",
        )
        return Outcome(record("missing", True, hard), message, None, comparison)

    fix = f"If the change is intended, run: {update_command([nodeid])}"
    failures = comparison.failures
    if failures:
        n = len(failures)
        message = failure_text(
            f"{who} regressed against {shown} ({n} problem{'s' if n > 1 else ''}):",
            failures,
            fix,
            notes,
        )
        return Outcome(record("regressed", True, failures), message, None, comparison)

    if comparison.improvements:
        rows = comparison.improvements
        tighten = f"Lock it in with: {update_command([nodeid])}"
        marker = limits.fail_on_improvement
        if session.fail_on_improvement if marker is None else marker:
            message = failure_text(
                f"{who} improved beyond tolerance against {shown} "
                f"(fail_on_improvement keeps baselines tight):",
                rows,
                tighten,
                notes,
            )
            return Outcome(record("improved", True, rows), message, None, comparison)
        hint = failure_text(f"{who} improved against {shown}:", rows, tighten)
        # A warning needs a look more than an improvement does: it keeps its own status.
        noted: Status = "warning" if comparison.warnings else "improved"
        return Outcome(record(noted, False, ()), None, hint, comparison)

    if comparison.warnings:
        return Outcome(record("warning", False, ()), None, None, comparison)
    return Outcome(record("ok", False, ()), None, None, comparison)


def gate_profile(
    profile: ModelProfile,
    request: ProfileRequest,
    *,
    nodeid: str,
    name: str | None,
    limits: Limits,
    sweep: Mapping[str, Sequence[int]] | None,
    session: SessionSettings,
    rootdir: Path,
    paths: BaselinePaths | None,
    collectors: Mapping[str, Collector[Any]] = BUILTIN_COLLECTORS,
) -> Outcome:
    """One profile of a test through the gate: its baseline read once, the collectors run
    against it (against none when updating), the profile judged."""
    stored = load_baseline(nodeid, name, session, rootdir, paths)
    against = None if session.update else stored.document
    evidence = collect(request, limits, sweep, against, collectors)
    return evaluate(
        profile, nodeid=nodeid, name=name, limits=limits, session=session, rootdir=rootdir,
        evidence=evidence, collectors=collectors, stored=stored, paths=paths,
    )
