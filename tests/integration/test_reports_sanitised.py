"""Hostile text in every report: control characters never reach a report, the PR comment or an
annotation, and one absurdly long test id cannot blow up the Markdown report or the job summary.

A model's name, its layers' names and its test's id are whatever the user's code (or a fork's
pull request) says; terminal escapes in them would repaint the CI log, and a bidi override
would make a line read differently from what it holds.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from modelprof_testing import Project

from pytest_modelprof.cli import main

#: C0 controls but newline and tab, DEL, C1 controls, and the bidi embeddings and isolates.
CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
EVIL_MODEL = "ev\x1b[31mil\x1b]8;;https://evil.example\x07link\x1b]8;;\x07\rover\u202eedoc\x00"
EVIL_LAYER = "bo\x1b[2Jdy\x9b31m"

TESTS = f"""
import pytest

@pytest.mark.parametrize("tag", ["x"], ids=[{EVIL_LAYER!r}])
@pytest.mark.profile(model={"fake:" + EVIL_MODEL!r}, max_flops_delta=0.1)
def test_evil(tag):
    pass
"""


def _github(monkeypatch: pytest.MonkeyPatch, project: Project) -> Path:
    summary = project.root / "summary.md"
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    monkeypatch.setenv("GITHUB_WORKSPACE", str(project.root.parent))
    return summary


def test_control_characters_reach_no_report(
    project: Project, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    project.pytester.makepyfile(test_evil=TESTS)
    project.set_costs(**{EVIL_MODEL: {"flops": 1_000_000, "layers": {EVIL_LAYER: 1_000_000}}})
    project.run("--modelprof-update-baselines").assert_outcomes(passed=1)
    project.set_costs(**{EVIL_MODEL: {"flops": 1_300_000, "layers": {EVIL_LAYER: 1_300_000}}})
    summary = _github(monkeypatch, project)
    result = project.run(
        "--modelprof-markdown=report.md",
        "--modelprof-report=report.html",
        "--modelprof-json=results.json",
    )
    result.assert_outcomes(failed=1)
    annotations = [line for line in result.outlines if line.startswith("::")]
    assert annotations, result.outlines
    ours = result.outlines[
        result.outlines.index(next(x for x in result.outlines if "= modelprof =" in x)) :
    ]
    capsys.readouterr()
    assert main(["comment", str(project.root / "results.json")]) == 0
    comment = capsys.readouterr().out
    reports = {
        "report.md": (project.root / "report.md").read_text(),
        "report.html": (project.root / "report.html").read_text(),
        "job summary": summary.read_text(),
        "annotations": "\n".join(annotations),
        "terminal summary": "\n".join(ours),
        "PR comment": comment,
    }
    for where, text in reports.items():
        found = sorted({repr(c) for c in CONTROL.findall(text)})
        assert not found, f"{where} holds {', '.join(found)}"
        # Shown, not dropped: the reader sees that the name holds an escape.
        assert "\\x1b" in text, where


LONG_ID = """
import pytest

@pytest.mark.parametrize("tag", ["x"], ids=["LONG" + "y" * 100_000])
@pytest.mark.profile(model="fake:tiny")
def test_long(tag):
    pass
"""


def test_one_long_id_cannot_blow_up_the_markdown_or_the_job_summary(
    project: Project, monkeypatch: pytest.MonkeyPatch
) -> None:
    project.pytester.makepyfile(test_long=LONG_ID)
    summary = _github(monkeypatch, project)
    result = project.run("--modelprof-markdown=report.md")
    result.assert_outcomes(failed=1)  # no baseline: the id is in every table
    markdown = (project.root / "report.md").read_text()
    written = summary.read_text()
    assert len(markdown) < 20_000, len(markdown)
    assert len(written) < 20_000, len(written)
    for text in (markdown, written):
        assert "`test_long.py::test_long[LONGyyy" in text and "\u2026" in text
    (annotation,) = [line for line in result.outlines if line.startswith("::error")]
    assert len(annotation) < 2_000 and "::test_long.py::test_long[LONGyyy" in annotation
