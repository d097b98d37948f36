"""Every renderer's output on the sample results, byte for byte against committed files.

Moving modules between packages must change no output: the JSON document, the Markdown report
and job summary, the pull-request comment, the HTML report, the ``modelprof report`` text, the
terminal summary and the GitHub annotations of the samples are compared with the files under
``data/golden/``. The run's duration is not in them (the samples' start and end are fixed).
When an output changes on purpose, rewrite the files and review their diff::

    python tests/unit/report/test_golden_outputs.py
"""

from __future__ import annotations

import difflib
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from report_samples import make_results

from pytest_modelprof.report.comment import render_comment
from pytest_modelprof.report.github import annotation_lines
from pytest_modelprof.report.html import render_html
from pytest_modelprof.report.markdown import render_markdown, render_step_summary
from pytest_modelprof.report.summary import problem_lines, summary_lines
from pytest_modelprof.report.text import render_diff
from pytest_modelprof.report.view import build_view
from pytest_modelprof.results.document import RunResults, load_document

DATA = Path(__file__).with_name("data")
GOLDEN = DATA / "golden"
COMMAND = "python tests/unit/report/test_golden_outputs.py"


def _samples() -> dict[str, RunResults]:
    """The hand-built run, and a version-2 results file read through its migrations."""
    old = load_document(DATA / "results-v2.json")
    assert isinstance(old, RunResults)
    return {"sample": make_results(), "v2": old}


def _terminal(results: RunResults) -> str:
    tests = results.tests
    lines = summary_lines(tests, 100) + [""] + problem_lines(tests, 100)
    return "\n".join(lines) + "\n"


def _annotations(results: RunResults) -> str:
    return "\n".join(annotation_lines(results, rootdir=Path("/repo"), workspace="/repo")) + "\n"


RENDERERS: dict[str, Callable[[RunResults], str]] = {
    "json": lambda r: r.to_json(),
    "md": lambda r: render_markdown(build_view(r)),
    "summary.md": lambda r: render_step_summary(build_view(r)),
    "comment.md": render_comment,
    "html": lambda r: render_html(build_view(r)),
    "txt": lambda r: render_diff(build_view(r), width=100),
    "terminal.txt": _terminal,
    "annotations.txt": _annotations,
}


def outputs() -> dict[str, str]:
    """File name -> text: the hand-built run through every renderer; the version-2 file as the
    JSON it migrates to (every other output is rendered from that document)."""
    samples = _samples()
    out = {f"sample.{suffix}": render(samples["sample"]) for suffix, render in RENDERERS.items()}
    out["v2.json"] = samples["v2"].to_json()
    return out


@pytest.mark.parametrize("name", sorted(outputs()))
def test_output_is_the_committed_one(name: str) -> None:
    got = outputs()[name]
    path = GOLDEN / name
    want = path.read_text(encoding="utf-8") if path.is_file() else ""
    diff = "\n".join(
        difflib.unified_diff(want.splitlines(), got.splitlines(), "committed", "now", lineterm="")
    )
    assert got == want, f"{name} changed; if on purpose, rewrite with: {COMMAND}\n{diff[:4000]}"


def test_the_goldens_are_all_used() -> None:
    # A renderer dropped from the list leaves its files behind, compared with nothing.
    assert sorted(p.name for p in GOLDEN.iterdir()) == sorted(outputs())


def main() -> int:
    GOLDEN.mkdir(exist_ok=True)
    for old in GOLDEN.iterdir():
        old.unlink()
    for name, text in outputs().items():
        (GOLDEN / name).write_text(text, encoding="utf-8")
    print(f"wrote {len(outputs())} files to {GOLDEN}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
