"""Documents judged against each other by the gate's judge (``modelprof compare``)."""

from __future__ import annotations

from typing import Any

from pytest_modelprof.baseline.check import Verdict
from pytest_modelprof.baseline.compare import Comparison
from pytest_modelprof.baseline.document import BaselineDocument
from pytest_modelprof.baseline.ops import op_sites
from pytest_modelprof.errors import ReportError
from pytest_modelprof.gate.collect import BUILTIN_COLLECTORS, stored_evidence
from pytest_modelprof.gate.judge import Evidence, judge
from pytest_modelprof.gate.limits import Limits
from pytest_modelprof.results.document import Document, RunInfo, RunResults
from pytest_modelprof.results.record import ProfileResult, SourceLocation, Status
from pytest_modelprof.schema import ModelProfile

__all__ = ["compare_documents"]


def _status(verdict: Verdict) -> Status:
    if verdict in ("regressed", "unmeasured"):
        return "regressed"
    if verdict in ("improved", "warning"):
        return verdict
    return "new" if verdict == "new" else "ok"


def _judged(
    after: BaselineDocument,
    before: BaselineDocument | None,
    limits: Limits,
    new: ModelProfile | None = None,
) -> Comparison:
    """The gate's own judge on two stored sides: every row the gate makes from them (uncounted
    ops, capture fallback, latency from stored timing rounds, compile health); a profile on the
    new side also names the lines that called the ops whose calls changed."""
    sites = op_sites(new.op_calls) if new is not None else None
    found = stored_evidence(after)
    return judge(Evidence(after, found, op_sites=sites), before, limits, BUILTIN_COLLECTORS)


def _result(
    comparison: Comparison, after: BaselineDocument, before: BaselineDocument | None, **fields: Any
) -> ProfileResult:
    status = _status(comparison.verdict)
    return ProfileResult(
        nodeid=after.test,
        name=after.name,
        model=after.model,
        status=status,
        failed=status == "regressed",
        checks=list(comparison.checks),
        failures=[c.describe() for c in comparison.failures],
        warnings=[c.describe() for c in comparison.warnings],
        environment=list(comparison.environment),
        metrics={k: float(v) for k, v in after.metrics.items()},
        baseline_metrics={k: float(v) for k, v in before.metrics.items()} if before else {},
        baseline=before,
        timing=after.timing,
        **fields,
    )


def compare_profiles(
    old: ModelProfile | None,
    new: ModelProfile,
    limits: Limits,
    *,
    nodeid: str,
    name: str | None = None,
    location: SourceLocation | None = None,
    timing: dict[str, Any] | None = None,
    baseline_timing: dict[str, Any] | None = None,
) -> ProfileResult:
    """Judge ``new`` against ``old`` as the gate would, with ``old`` as the baseline;
    ``timing`` and ``baseline_timing`` are the stored timing rounds of each side, if any."""
    settings = limits.describe()
    before = (
        BaselineDocument.from_profile(
            old, test=nodeid, name=name, settings=settings, timing=baseline_timing
        )
        if old is not None
        else None
    )
    after = BaselineDocument.from_profile(
        new, test=nodeid, name=name, settings=settings, timing=timing
    )
    return _result(
        _judged(after, before, limits, new), after, before, location=location, profile=new
    )


def _has_timing(document: Document) -> bool:
    if isinstance(document, BaselineDocument):
        return document.timing is not None
    if isinstance(document, RunResults):
        return any(t.timing is not None for t in document.tests)
    return False  # a profile never holds timing rounds


def _check_latency_limit(new: Document, limits: Limits, source: str) -> None:
    """A latency limit needs the timing rounds a gated run stored; refuse it, never skip it."""
    if "latency" not in limits.explicit or _has_timing(new):
        return
    kind = {
        ModelProfile: "a profile never stores timing rounds",
        BaselineDocument: "this baseline file stores no timing rounds",
        RunResults: "no test of this results file stored timing rounds",
    }[type(new)]
    raise ReportError(
        f"{source}: a latency limit (max_latency or max_latency_delta) cannot be judged: "
        f"{kind}. "
        f"Compare two baseline files or results files of runs whose tests had a latency limit "
        f"in their marker, or drop the latency limit"
    )


def _baseline_only(old: ProfileResult) -> ProfileResult:
    """A test the old run had and the new one lacks: shown as missing, nothing to compare."""
    return ProfileResult(
        nodeid=old.nodeid,
        name=old.name,
        model=old.model,
        status="missing",
        failed=False,
        baseline_path=old.baseline_path,
        location=old.location,
        baseline=(
            BaselineDocument.from_profile(
                old.profile, test=old.nodeid, name=old.name, settings={}
            )
            if old.profile is not None
            else old.baseline
        ),
    )


def compare_documents(
    old: Document, new: Document, limits: Limits, *, new_source: str = "NEW"
) -> RunResults:
    """Two profiles, two baselines or two results files, judged pairwise (matched by label)
    by the gate's judge; ``new_source`` names ``new`` in errors."""
    if type(old) is type(new):
        _check_latency_limit(new, limits, new_source)
    if isinstance(old, RunResults) and isinstance(new, RunResults):
        before = {t.label: t for t in old.tests}
        tests: list[ProfileResult] = []
        for t in new.tests:
            prev = before.pop(t.label, None)
            if t.profile is None:  # an error row (the test failed before its gate judged it):
                tests.append(t)  # nothing to compare, and the run it stands for was red
                continue
            tests.append(
                compare_profiles(
                    prev.profile if prev is not None else None,
                    t.profile,
                    limits,
                    nodeid=t.nodeid,
                    name=t.name,
                    location=t.location,
                    timing=t.timing,
                    baseline_timing=prev.timing if prev is not None else None,
                )
            )
        tests.extend(_baseline_only(t) for t in before.values())
        return RunResults(run=new.run, tests=tests)
    if isinstance(old, ModelProfile) and isinstance(new, ModelProfile):
        label = new.model if new.model == old.model else f"{old.model} -> {new.model}"
        return RunResults(
            run=RunInfo(
                torch_version=new.environment.torch_version, device=new.environment.device
            ),
            tests=[compare_profiles(old, new, limits, nodeid=label)],
        )
    if isinstance(old, BaselineDocument) and isinstance(new, BaselineDocument):
        return RunResults(
            run=RunInfo(torch_version=new.environment.torch_version,
                        device=new.environment.device),
            tests=[_result(_judged(new, old, limits), new, old)],
        )
    raise ReportError(
        f"cannot compare a {type(old).__name__} with a {type(new).__name__}; give two profiles, "
        f"two baseline files or two results files"
    )
