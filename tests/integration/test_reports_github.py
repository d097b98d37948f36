"""On GitHub Actions: a job summary table and one ::error annotation per regressed test."""

from __future__ import annotations

import pytest
from modelprof_testing import Project
from report_testing import regressing_project


def _github(monkeypatch: pytest.MonkeyPatch, project: Project) -> None:
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(project.root / "summary.md"))
    monkeypatch.setenv("GITHUB_WORKSPACE", str(project.root.parent))
    monkeypatch.setenv("GITHUB_SERVER_URL", "https://github.com")
    monkeypatch.setenv("GITHUB_REPOSITORY", "o/r")
    monkeypatch.setenv("GITHUB_RUN_ID", "42")


def test_summary_and_annotations(project: Project, monkeypatch: pytest.MonkeyPatch) -> None:
    regressing_project(project)
    (project.root / "summary.md").write_text("from an earlier step\n")
    _github(monkeypatch, project)
    result = project.run("--modelprof-report=report.html")  # a report to link to
    result.assert_outcomes(passed=1, failed=1)
    where = f"{project.root.name}/test_models.py"
    result.stdout.fnmatch_lines([
        f"::error file={where},line=3,title=modelprof regression::test_models.py::test_tiny: "
        "FLOPs: 1 MFLOPs \u2192 1.3 MFLOPs (+30.0 %25, limit +10.0 %25)%0A"
        "MACs: 500 KMACs \u2192 650 KMACs (+30.0 %25, limit exact)"
    ])
    assert sum(line.startswith("::error") for line in result.outlines) == 1
    summary = (project.root / "summary.md").read_text()
    assert summary.startswith("from an earlier step\n### modelprof cost report\n")
    assert "| \u274c regressed | `test_models.py::test_tiny` |" in summary
    assert "[Full HTML report](https://github.com/o/r/actions/runs/42#artifacts)" in summary


def test_artifact_url_option(project: Project, monkeypatch: pytest.MonkeyPatch) -> None:
    regressing_project(project)
    _github(monkeypatch, project)
    project.run("--modelprof-artifact-url=https://example.test/a/1")
    assert "(https://example.test/a/1)" in (project.root / "summary.md").read_text()


def test_github_off(project: Project, monkeypatch: pytest.MonkeyPatch) -> None:
    regressing_project(project)
    _github(monkeypatch, project)
    result = project.run("--modelprof-github=off")
    assert not any(line.startswith("::error") for line in result.outlines)
    assert not (project.root / "summary.md").exists()


def test_nothing_outside_github(project: Project) -> None:
    regressing_project(project)
    result = project.run()
    assert not any(line.startswith("::") for line in result.outlines)
    assert "modelprof: wrote" not in result.stdout.str()
