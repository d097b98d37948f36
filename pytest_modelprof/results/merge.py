"""CI shards joined into one results document (``modelprof merge``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pytest_modelprof.errors import ReportError
from pytest_modelprof.results.document import RunResults
from pytest_modelprof.results.record import ProfileResult

__all__ = ["merge_results"]


def merge_results(parts: Sequence[tuple[str, RunResults]]) -> RunResults:
    """Join the results of CI shards; a profile in two shards, or two commits, is an error."""
    if not parts:
        raise ReportError("nothing to merge: give at least one results file")
    seen: dict[str, str] = {}
    tests: list[ProfileResult] = []
    for source, part in parts:
        for t in part.tests:
            if t.label in seen:
                raise ReportError(
                    f"{t.label} is in both {seen[t.label]} and {source}; each test should run "
                    f"in one shard only"
                )
            seen[t.label] = source
            tests.append(t)
    commits = {p.run.commit for _, p in parts if p.run.commit}
    if len(commits) > 1:
        listing = ", ".join(f"{s}: {p.run.commit}" for s, p in parts)
        raise ReportError(f"the shards come from different commits ({listing})")

    def first(field: str) -> Any:
        return next((getattr(p.run, field) for _, p in parts if getattr(p.run, field)), None)

    def joined(field: str) -> str | None:
        values: set[str] = set()
        for _, p in parts:
            value = getattr(p.run, field)
            if value:
                values.update(v.strip() for v in str(value).split(","))
        return ", ".join(sorted(values)) or None

    starts = [p.run.started for _, p in parts if p.run.started is not None]
    ends = [p.run.finished for _, p in parts if p.run.finished is not None]
    statuses = [p.run.exit_status for _, p in parts if p.run.exit_status is not None]
    run = parts[0][1].run.model_copy(
        update={
            "started": min(starts) if starts else None,
            "finished": max(ends) if ends else None,
            "commit": first("commit"),
            "ref": first("ref"),
            "repository_url": first("repository_url"),
            "run_url": first("run_url"),
            "artifact_url": first("artifact_url"),
            "torch_version": joined("torch_version"),
            "device": joined("device"),
            "exit_status": max(statuses) if statuses else None,
            "shards": sum(p.run.shards for _, p in parts),
        }
    )
    return RunResults(run=run, tests=tests)
