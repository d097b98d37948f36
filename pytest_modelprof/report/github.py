"""GitHub Actions: workflow-command annotations and the job summary file.

An annotation is ``::error file=F,line=N,title=T::MESSAGE`` on stdout; GitHub's escaping rules
apply (``%``, ``\\r``, ``\\n`` everywhere, plus ``:`` and ``,`` in properties). ``file`` is
relative to ``GITHUB_WORKSPACE`` (the repository root), ``line`` 1-based.
"""

from __future__ import annotations

import os
from pathlib import Path

from pytest_modelprof.report.markdown import MAX_CODE
from pytest_modelprof.report.view import headline
from pytest_modelprof.results.document import RunResults
from pytest_modelprof.textfit import cut_middle, plain

__all__ = [
    "annotation_lines",
    "append_step_summary",
]

ANNOTATION_TITLE = "modelprof regression"
_TITLES = {
    "regressed": ANNOTATION_TITLE,
    "missing": "modelprof: no baseline",
    "error": "modelprof error",
    "improved": "modelprof: improved beyond tolerance",
}


def escape_data(text: str) -> str:
    """Escape a workflow command's message (control characters first written as escapes: a
    terminal escape in a test id must not reach the log as one)."""
    return plain(text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A"))


def escape_property(text: str) -> str:
    """Escape a workflow command's property value (``file=``, ``title=``)."""
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def _workspace_path(path: str, rootdir: Path, workspace: str | None) -> str:
    absolute = (rootdir / path).resolve()
    if workspace:
        try:
            return absolute.relative_to(Path(workspace).resolve()).as_posix()
        except ValueError:
            pass
    return Path(path).as_posix()


def annotation_lines(
    results: RunResults, *, rootdir: Path, workspace: str | None = None
) -> list[str]:
    """One ``::error`` line per failed profile (regressions, missing baselines, errors)."""
    lines = []
    for test in results.ordered():
        if not test.failed:
            continue
        props = []
        if test.location is not None:
            file = _workspace_path(test.location.path, rootdir, workspace)
            props += [f"file={escape_property(file)}", f"line={test.location.line}"]
        title = _TITLES.get(test.status, ANNOTATION_TITLE)
        props.append(f"title={escape_property(title)}")
        problems = [c.describe() for c in test.checks if c.failed] or list(test.failures)
        if test.status == "error":  # the message the test failed with, then any failed row
            problems = list(dict.fromkeys([*test.failures, *problems]))
        # A test id as long as anyone likes stays one readable name, as in the job summary.
        label = cut_middle(test.label, MAX_CODE)
        message = f"{label}: " + ("\n".join(problems) if problems else headline(test))
        if test.environment:
            message += "\nbaseline from another environment: " + "; ".join(test.environment)
        lines.append(f"::error {','.join(props)}::{escape_data(message)}")
    return lines


def append_step_summary(path: str | os.PathLike[str], markdown: str) -> None:
    """Append to ``$GITHUB_STEP_SUMMARY`` (other steps and tools write to it too)."""
    with open(path, "a", encoding="utf-8") as handle:
        handle.write(markdown if markdown.endswith("\n") else markdown + "\n")

