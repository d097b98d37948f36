"""--modelprof-markdown: the diff report as Markdown."""

from __future__ import annotations

from modelprof_testing import Project
from report_testing import EVIL_ID, regressing_project


def test_markdown_report(project: Project) -> None:
    regressing_project(project)
    project.run("--modelprof-markdown=report.md").assert_outcomes(passed=1, failed=1)
    text = (project.root / "report.md").read_text()
    rows = [line for line in text.splitlines() if line.startswith("| \u274c")
            or line.startswith("| \u2705")]
    assert rows[0].startswith("| \u274c regressed | `test_models.py::test_tiny` |")
    assert f"`test_models.py::test_other[{EVIL_ID}]`" in rows[1]
    assert "| FLOPs | 1 MFLOPs | 1.3 MFLOPs | +300 KFLOPs (+30.0 %) | +10.0 % | **regressed** |" \
        in text
    assert "- `head&<b>` (`Conv2d`): +300 KFLOPs" in text
