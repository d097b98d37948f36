"""The reports of one run: which files a session writes, the job summary and the annotations.

Real records (the report samples) fed as the plugin feeds them; every output goes to a
temporary folder, and a GitHub runner is only its environment variables.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from report_samples import make_results

from pytest_modelprof.errors import ReportError
from pytest_modelprof.report.session import SessionReports, write_outputs
from pytest_modelprof.results.document import RunResults
from pytest_modelprof.results.outputs import ReportSettings


def _session(tmp_path: Path, options: ReportSettings, **env: str) -> SessionReports:
    session = SessionReports(options=options, rootdir=tmp_path, env=env)
    for record in make_results().tests:
        session.add_record(record.model_copy(update={"location": None}))
    return session


def test_nothing_asked_for_and_not_on_github_writes_nothing(tmp_path: Path) -> None:
    session = _session(tmp_path, ReportSettings())
    assert session.finish(0) == ([], [])
    assert list(tmp_path.iterdir()) == []


def test_each_requested_file_is_written_and_said(tmp_path: Path) -> None:
    options = ReportSettings(
        json=tmp_path / "r.json", html=tmp_path / "r.html", markdown=tmp_path / "r.md"
    )
    notes, annotations = _session(tmp_path, options).finish(1)
    assert notes == [
        f"modelprof: wrote JSON report to {tmp_path / 'r.json'}",
        f"modelprof: wrote HTML report to {tmp_path / 'r.html'}",
        f"modelprof: wrote Markdown report to {tmp_path / 'r.md'}",
    ]
    assert annotations == []  # not in GitHub Actions
    back = RunResults.from_json((tmp_path / "r.json").read_text(encoding="utf-8"))
    assert [t.nodeid for t in back.tests] == [t.nodeid for t in make_results().tests]
    assert back.run.exit_status == 1
    assert (tmp_path / "r.html").read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
    assert "test_same" in (tmp_path / "r.md").read_text(encoding="utf-8")


def test_without_an_html_report_the_summary_links_to_no_artifact(tmp_path: Path) -> None:
    linked = _session(tmp_path, ReportSettings(artifact_url="https://ci.example/a"))
    assert linked.results().run.artifact_url == "https://ci.example/a"
    unlinked = _session(tmp_path, ReportSettings(json=tmp_path / "r.json"))
    assert unlinked.results().run.artifact_url is None


def test_on_github_the_job_summary_is_appended_and_failed_tests_are_annotated(
    tmp_path: Path,
) -> None:
    summary = tmp_path / "summary.md"
    summary.write_text("# another step's summary\n", encoding="utf-8")
    session = _session(
        tmp_path, ReportSettings(), GITHUB_STEP_SUMMARY=str(summary), GITHUB_ACTIONS="true"
    )
    failed = next(t.nodeid for t in make_results().tests if t.failed)
    session.add_location(failed, "tests/test_x.py", 11)
    session.add_location(failed, "elsewhere.py", 99)  # the first location a test reports holds
    notes, annotations = session.finish(1)
    assert notes == []
    text = summary.read_text(encoding="utf-8")
    assert text.startswith("# another step's summary\n") and len(text) > 30
    (line,) = annotations  # one failed test, one annotation
    assert line.startswith("::error file=tests/test_x.py,line=12,title=")


def test_a_job_summary_that_cannot_be_written_is_said_not_raised(tmp_path: Path) -> None:
    folder = tmp_path / "a-folder"
    folder.mkdir()
    session = _session(tmp_path, ReportSettings(), GITHUB_STEP_SUMMARY=str(folder))
    notes, annotations = session.finish(0)
    assert len(notes) == 1
    assert notes[0].startswith(f"modelprof: cannot write the job summary {folder}: ")
    assert annotations == []  # GITHUB_ACTIONS unset: no annotations


def test_github_off_or_no_profile_writes_no_job_summary(tmp_path: Path) -> None:
    summary = tmp_path / "summary.md"
    off = _session(tmp_path, ReportSettings(github=False), GITHUB_STEP_SUMMARY=str(summary))
    assert off.finish(0) == ([], [])
    empty = SessionReports(
        options=ReportSettings(), rootdir=tmp_path, env={"GITHUB_STEP_SUMMARY": str(summary)}
    )
    assert empty.finish(0) == ([], [])
    assert not summary.exists()


def test_a_report_path_that_cannot_be_written_names_it(tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("x", encoding="utf-8")
    target = blocker / "r.json"
    with pytest.raises(ReportError, match=f"cannot write {target}: "):
        write_outputs(make_results(), json=target)
    assert blocker.read_text(encoding="utf-8") == "x"
