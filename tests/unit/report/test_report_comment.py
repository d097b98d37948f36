"""``modelprof comment``: the pull-request comment, built from a results file anyone could have
written (a fork's gate), validated, capped and escaped."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from report_samples import HOSTILE, hostile_results, no_live_markdown, outside_code_spans

from pytest_modelprof.cli import main
from pytest_modelprof.report.comment import (
    MAX_CHARS,
    MAX_FILE_BYTES,
    MAX_ROWS,
    MAX_TEXT,
    load_results,
    render_comment,
)
from pytest_modelprof.report.markdown import render_markdown
from pytest_modelprof.report.view import build_view
from pytest_modelprof.results.document import RunResults

REPO = Path(__file__).resolve().parents[3]


def _comment(tmp_path: Path, data: str) -> tuple[int, str]:
    results = tmp_path / "results.json"
    results.write_text(data)
    out = tmp_path / "comment.md"
    code = main(["comment", str(results), "--output", str(out)])
    return code, out.read_text() if out.exists() else ""


def test_every_text_is_plain_and_no_link_is_theirs(tmp_path: Path) -> None:
    code, text = _comment(tmp_path, hostile_results().to_json())
    assert code == 0
    outside = outside_code_spans(text)
    no_live_markdown(outside)
    assert not re.search(r"(?<!\\)\]\(", outside)  # no link at all: the workflow adds its own
    assert "\\*\\*APPROVED\\*\\*" in text and "@\u200borg/team" in text
    # The results' own URLs are not shown as links either (the workflow links the run).
    assert "https://github.com/o/r/actions/runs/7#artifacts" not in text


def test_the_comment_is_the_markdown_report_of_the_same_results(
        results: RunResults, tmp_path: Path) -> None:
    code, text = _comment(tmp_path, results.to_json())
    assert code == 0
    run = results.run.model_copy(update={"artifact_url": None, "run_url": None,
                                         "repository_url": None})
    assert text == render_markdown(build_view(results.model_copy(update={"run": run})))
    assert "**regressed**" in text and "+40.0 %" in text


def test_sizes_are_capped(results: RunResults, tmp_path: Path) -> None:
    data = json.loads(results.to_json())
    regressed = next(t for t in data["tests"] if t["status"] == "regressed")
    regressed["checks"] = [dict(regressed["checks"][0], label=f"row{i:03}") for i in range(60)]
    data["tests"] = [dict(regressed, nodeid=f"tests/test_x.py::test_{i:03}") for i in range(120)]
    data["tests"][0]["checks"][0]["reason"] = "A" * 100_000 + HOSTILE
    path = tmp_path / "results.json"
    path.write_text(json.dumps(data))
    loaded = load_results(path)
    assert [len(t.checks) for t in loaded.tests] == [MAX_ROWS] * 120
    assert len(loaded.tests[0].checks[0].reason) == MAX_TEXT
    code, text = _comment(tmp_path, json.dumps(data))
    assert code == 0
    assert len(text) <= MAX_CHARS
    assert "A" * (MAX_TEXT + 1) not in text and "A" * (MAX_TEXT - 10) in text
    assert text.rstrip().endswith(
        "*Cut to fit a comment (120 profiles, regressions first): the rest is in the HTML report.*")
    assert "test_000" in text and "test_119" not in text
    no_live_markdown(outside_code_spans(text))


def test_the_caps_apply_to_the_rendered_comment() -> None:
    results = hostile_results()
    assert len(render_comment(results, limit=2_000)) <= 2_000


@pytest.mark.parametrize("data, expected", [
    ('{"kind": "pytest-modelprof-results", "tests": [{"nodeid": 1}]}', "tests.0.nodeid"),
    ('{"kind": "pytest-modelprof-results", "run": {}, "tests": [], "more": "x"}', "more"),
    ('{"capture": {}, "layers": []}', "not a results file"),
    ("[1, 2]", "not a results file"),
    ("{", "not valid JSON"),
])
def test_a_file_that_is_not_results_is_an_error(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], data: str, expected: str) -> None:
    code, text = _comment(tmp_path, data)
    err = capsys.readouterr().err
    assert code == 2 and text == ""
    assert "results.json" in err and expected in err


def test_a_file_too_big_is_refused_before_it_is_read(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    results = tmp_path / "results.json"
    with results.open("wb") as f:
        f.truncate(MAX_FILE_BYTES + 1)  # sparse: nothing is written
    code = main(["comment", str(results), "--output", str(tmp_path / "c.md")])
    err = capsys.readouterr().err
    assert code == 2 and "results.json" in err and "larger than" in err
    assert not (tmp_path / "c.md").exists()


def test_it_runs_without_torch(results: RunResults, tmp_path: Path) -> None:
    """The comment job installs pytest-modelprof without its dependencies, pydantic aside."""
    path = tmp_path / "results.json"
    path.write_text(results.to_json())
    blocked = ("torch", "torchvision", "jinja2", "pytest", "_pytest", "numpy")
    script = (f"import sys\nfor name in {blocked!r}:\n    sys.modules[name] = None\n"
              "from pytest_modelprof.cli import main\n"
              f"sys.exit(main(['comment', {str(path)!r}, '--output', "
              f"{str(tmp_path / 'c.md')!r}]))\n")
    done = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, capture_output=True,
                          text=True, timeout=120, check=False,
                          env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"})
    assert done.returncode == 0, done.stdout + done.stderr
    assert "**regressed**" in (tmp_path / "c.md").read_text()
