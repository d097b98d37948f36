"""The pull-request comment: the Markdown report of a results file that anyone may have written.

In a pull request from a fork the gate runs the fork's workflow, so its artifact is the fork's
own text. The trusted comment job therefore never posts a file from the artifact: it reads the
results JSON, validates it against :class:`~pytest_modelprof.results.document.RunResults`,
caps every size (the file, each string, the rows of a test, the tests, the comment) and renders
it with the Markdown renderer, which escapes every text. The comment carries no link from the
file; the workflow adds its own (the run and the HTML report artifact).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Final

from pytest_modelprof._json import JSONProblem, load_json
from pytest_modelprof.baseline.check import FAILING
from pytest_modelprof.errors import ReportError
from pytest_modelprof.report.markdown import fit, render_markdown
from pytest_modelprof.report.view import build_view
from pytest_modelprof.results.document import RESULTS_KIND, RunResults

__all__ = [
    "load_results",
    "render_comment",
]

#: A results file larger than this is refused before it is read.
MAX_FILE_BYTES: Final = 64 * 1024 * 1024
#: Characters kept of any one string of the file (ids, labels, reasons, ...).
MAX_TEXT: Final = 300
#: Checks, failures, warnings and environment notes kept per test, and items per detail list.
MAX_ROWS: Final = 50
#: Tests shown, regressions first.
MAX_TESTS: Final = 50
#: Characters of the whole comment (GitHub holds 65,536; the workflow adds a marker and links).
MAX_CHARS: Final = 60_000

_ROW_LISTS: Final = ("checks", "failures", "warnings", "environment")


def _cap_text(value: str) -> str:
    return value if len(value) <= MAX_TEXT else value[: MAX_TEXT - 1] + "\u2026"


def _cap(value: Any, *, lists: bool) -> Any:
    """Every string cut to :data:`MAX_TEXT`; with ``lists``, every list to :data:`MAX_ROWS`."""
    if isinstance(value, str):
        return _cap_text(value)
    if isinstance(value, list):
        items = value[:MAX_ROWS] if lists else value
        return [_cap(v, lists=lists) for v in items]
    if isinstance(value, dict):
        return {_cap_text(str(k)): _cap(v, lists=lists) for k, v in value.items()}
    return value


def _cap_test(test: Any) -> Any:
    if not isinstance(test, dict):
        return test  # validation names it
    test = dict(test)
    checks = test.get("checks")
    if isinstance(checks, list):
        # The failed rows are the ones a comment must keep.
        checks = sorted(checks, key=lambda c: not (isinstance(c, dict)
                                                   and c.get("verdict") in FAILING))
        test["checks"] = [
            dict(c, detail=_cap(c["detail"], lists=True))
            if isinstance(c, dict) and "detail" in c else c
            for c in checks[:MAX_ROWS]
        ]
    for key in _ROW_LISTS[1:]:
        if isinstance(test.get(key), list):
            test[key] = test[key][:MAX_ROWS]
    return _cap(test, lists=False)


def load_results(path: str | os.PathLike[str]) -> RunResults:
    """Read, cap and validate a results file; any problem is a :class:`ReportError` naming it."""
    source = str(path)
    try:
        size = Path(path).stat().st_size
        if size > MAX_FILE_BYTES:
            raise ReportError(f"{source}: {size:,} bytes, larger than a results file may be "
                              f"here ({MAX_FILE_BYTES:,}); is it the gate's results.json?")
        text = Path(path).read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        raise ReportError(f"{source}: cannot read ({exc.strerror or exc})") from None
    try:
        # Nesting is checked before anything recurses over the data (the caps below do).
        data = load_json(text, finite=False)
    except json.JSONDecodeError as exc:
        raise ReportError(f"{source}: not valid JSON ({exc})") from None
    except JSONProblem as exc:
        raise ReportError(f"{source}: {exc}") from None
    if not isinstance(data, dict) or data.get("kind") != RESULTS_KIND:
        raise ReportError(f"{source}: not a results file (the gate writes one with "
                          "--modelprof-json)")
    tests = data.get("tests")
    if isinstance(tests, list):
        data = dict(data, tests=[_cap_test(t) for t in tests])
    data = {k: (v if k == "tests" else _cap(v, lists=False)) for k, v in data.items()}
    return RunResults.from_json(json.dumps(data), source=source)


def render_comment(results: RunResults, *, limit: int = MAX_CHARS) -> str:
    """The Markdown report of ``results``, regressions first, without links, cut to ``limit``."""
    ordered = results.ordered()
    run = results.run.model_copy(
        update={"artifact_url": None, "run_url": None, "repository_url": None})
    shown = results.model_copy(update={"run": run, "tests": ordered[:MAX_TESTS]})
    text = render_markdown(build_view(shown))
    note = (f"Cut to fit a comment ({len(ordered)} profiles, regressions first): the rest is "
            "in the HTML report.")
    return fit(text, limit, note, cut=len(ordered) > MAX_TESTS)
