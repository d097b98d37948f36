"""The scheduled cost-history workflow: the documentation's block is this repository's file with a
user's install line, and its history step draws the page from a real repository here."""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

import pytest

yaml = pytest.importorskip("yaml")

from workflow_support import REPO, WORKFLOW_DIR, load, run_step, step  # noqa: E402

sys.path.insert(0, str(REPO / "tests" / "unit" / "history"))
from history_repo import scenario  # noqa: E402


def _readme_block() -> dict[str, Any]:
    text = (REPO / "docs" / "reports-ci.md").read_text()
    found = re.search(r"<!-- history-workflow: cost-history.yml -->\n```yaml\n(.*?)```", text,
                      re.S)
    assert found, "docs/reports-ci.md: the cost-history block is missing"
    data: dict[Any, Any] = yaml.safe_load(found.group(1))
    data["on"] = data.pop(True)
    return data


def test_the_readme_block_is_the_workflow_with_a_users_install() -> None:
    ours, doc = load(WORKFLOW_DIR / "cost-history.yml"), _readme_block()
    ours_install = step("cost-history.yml", "install")["run"]
    (doc_install,) = [s["run"] for s in doc["jobs"]["history"]["steps"]
                      if s.get("id") == "install"]
    assert "--no-deps ." in ours_install
    assert ("--no-deps \"pytest-modelprof @ git+https://github.com/pytest-modelprof/"
            "pytest-modelprof@0000000000000000000000000000000000000000\"") in doc_install
    for data in (ours, doc):
        for s in data["jobs"]["history"]["steps"]:
            if s.get("id") == "install":
                s["run"] = "<install>"
    assert doc == ours
    checkout = ours["jobs"]["history"]["steps"][0]
    assert checkout["with"]["fetch-depth"] == 0  # the whole history, not one commit
    assert "schedule" in ours["on"]


def test_the_history_step_draws_the_page(tmp_path: Path) -> None:
    repo = scenario(tmp_path / "repo")
    summary = tmp_path / "summary.md"
    done = run_step(step("cost-history.yml", "history"), repo.root,
                    {"GITHUB_STEP_SUMMARY": str(summary)})
    assert done.returncode == 0, done.stderr
    page = (repo.root / "history.html").read_text()
    assert page.count("<svg") == 8 and "widen network" in page
    assert (repo.root / "history.json").is_file()
    text = summary.read_text()
    assert text.startswith("# Cost history\n") and "## Largest steps" in text
    assert "widen network" in text and "## `" not in text  # not each test's section
