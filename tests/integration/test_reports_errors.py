"""A red job never has a green report: every test that uses the marker or the fixture
and fails before its gate could judge it is an ``error`` row in every report, with the message
the terminal printed.

Fake-engine runs are in-process; real-engine runs go through a subprocess (see the NB in
test_real_engine.py).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from markupsafe import escape
from modelprof_testing import BROKEN_MODEL, Project

from pytest_modelprof.report.markdown import text as markdown_text

TYPO = """
import pytest

@pytest.mark.profile(model="fake:tiny")
def test_ok():
    pass

@pytest.mark.profile(model="fake:tiny", max_flop_delta=0.1)
def test_typo():
    pass
"""

OUTPUTS = ("--modelprof-json=r.json", "--modelprof-report=r.html", "--modelprof-markdown=r.md")


def _github(monkeypatch: pytest.MonkeyPatch, root: Path) -> None:
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(root / "summary.md"))
    monkeypatch.setenv("GITHUB_WORKSPACE", str(root))


def _tests(root: Path) -> dict[str, dict[str, object]]:
    data = json.loads((root / "r.json").read_text())
    return {t["nodeid"] + (f"@{t['name']}" if t["name"] else ""): t for t in data["tests"]}


def _as_shown(message: str, report: str) -> str:
    """``message`` as the report shows it: HTML-escaped, or Markdown-escaped (every text of a
    results file is escaped there)."""
    return str(escape(message)) if report.endswith(".html") else markdown_text(message)


def _flat(text: str) -> str:
    """A message as a one-line report cell shows it."""
    return " ".join(text.split())


def test_a_marker_typo_is_an_error_row_in_every_report(
    project: Project, monkeypatch: pytest.MonkeyPatch
) -> None:
    project.pytester.makepyfile(test_models=TYPO)
    project.run("--modelprof-update-baselines", "-k", "test_ok").assert_outcomes(passed=1)
    _github(monkeypatch, project.root)
    result = project.run(*OUTPUTS)
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["error *test_models.py::test_typo*"])

    tests = _tests(project.root)
    assert set(tests) == {"test_models.py::test_ok", "test_models.py::test_typo"}
    typo = tests["test_models.py::test_typo"]
    assert typo["status"] == "error" and typo["failed"] is True
    (message,) = typo["failures"]
    assert isinstance(message, str) and "unknown argument max_flop_delta" in message
    assert message in result.stdout.str()  # the same message the terminal showed
    assert typo["location"] == {"path": "test_models.py", "line": 7}

    for name in ("r.md", "summary.md", "r.html"):
        text = (project.root / name).read_text()
        assert "2 profiles: 1 error, 1 ok" in text, name
        assert _flat(_as_shown(message, name)) in _flat(text), name
    summary = (project.root / "summary.md").read_text()
    assert "| \u274c error | `test_models.py::test_typo` |" in summary
    (annotation,) = [line for line in result.outlines if line.startswith("::error ")]
    assert "line=7" in annotation and "unknown argument max_flop_delta" in annotation
    # Printed once in the terminal: as the failure, not again in the modelprof summary.
    summary_part = result.stdout.str().split("= modelprof =")[1].split("short test summary")[0]
    assert "max_flop_delta" not in "\n".join(
        line for line in summary_part.splitlines() if not line.startswith("::")
    )


CORRUPT = """
import pytest

@pytest.mark.profile(model="fake:tiny")
def test_x():
    pass
"""


def test_an_unreadable_baseline_carries_its_reason_into_every_report(
    project: Project, monkeypatch: pytest.MonkeyPatch
) -> None:
    project.pytester.makepyfile(test_a=CORRUPT)
    project.run("--modelprof-update-baselines").assert_outcomes(passed=1)
    path = project.root / "baselines" / "test_a" / "test_x.json"
    data = json.loads(path.read_text())
    del data["metrics"]
    path.write_text(json.dumps(data))
    _github(monkeypatch, project.root)
    result = project.run(*OUTPUTS)
    result.assert_outcomes(failed=1)
    reason = "baselines/test_a/test_x.json: corrupt baseline (metrics: Field required)"
    (row,) = _tests(project.root).values()
    assert row["status"] == "error" and any(reason in f for f in row["failures"])
    for name in ("r.md", "summary.md", "r.html"):
        assert _as_shown(reason, name) in (project.root / name).read_text(), name
    (annotation,) = [line for line in result.outlines if line.startswith("::error ")]
    assert reason in annotation


def test_error_rows_travel_under_xdist(project: Project) -> None:
    pytest.importorskip("xdist")
    project.pytester.makepyfile(test_models=TYPO)
    project.run("--modelprof-update-baselines", "-k", "test_ok").assert_outcomes(passed=1)
    result = project.pytester.runpytest_subprocess("-n", "2", "--modelprof-json=r.json")
    result.assert_outcomes(passed=1, failed=1)
    tests = _tests(project.root)
    assert [tests[k]["status"] for k in sorted(tests)] == ["ok", "error"]
    assert "unknown argument max_flop_delta" in str(tests["test_models.py::test_typo"]["failures"])
    result.stdout.fnmatch_lines(["error *test_models.py::test_typo*"])


# -- real models: the model's own error, a named model, a missing extra, the test's own assert ---

NETS = f"""{BROKEN_MODEL}

def make_broken():
    return Broken()
"""

FINE = """
import pytest

@pytest.mark.profile(model="fake:tiny")
def test_ok():
    pass
"""

REAL = """
import sys

sys.modules["transformers"] = None  # as if the [hf] extra were not installed

import pytest
import torch.nn as nn

from nets import Broken


@pytest.mark.profile(max_flops_delta=0.1)
def test_fixture_model_raises(modelprof):
    modelprof(Broken(), input_shape=(2, 8), name="backbone")


@pytest.mark.profile(model="nets:make_broken", input_shape=(2, 8))
def test_named_model_raises():
    pass


@pytest.mark.profile(model="hf:bert")
def test_missing_extra():
    pass


def test_own_assertion(modelprof):
    profile = modelprof(nn.Linear(4, 4), input_shape=(2, 4))
    assert profile.total_flops < 0, "the test's own check"
"""


@pytest.mark.slow
def test_every_gated_test_that_fails_is_a_row_in_every_report(
    project: Project, monkeypatch: pytest.MonkeyPatch
) -> None:
    project.pytester.makepyfile(test_fine=FINE)
    project.run("--modelprof-update-baselines").assert_outcomes(passed=1)
    project.pytester.makepyfile(nets=NETS, test_real=REAL)
    _github(monkeypatch, project.root)
    result = project.pytester.runpytest_subprocess(*OUTPUTS)
    result.assert_outcomes(passed=1, failed=4)
    out = result.stdout.str()

    tests = _tests(project.root)
    expected = {
        "test_real.py::test_fixture_model_raises@backbone": "ValueError: the model's own bug",
        "test_real.py::test_named_model_raises": "ValueError: the model's own bug",
        "test_real.py::test_missing_extra": 'pip install "pytest-modelprof[hf]"',
        "test_real.py::test_own_assertion": "AssertionError: the test's own check",
    }
    assert set(tests) == {"test_fine.py::test_ok", *expected}
    assert tests["test_fine.py::test_ok"]["status"] == "ok"
    for label, part in expected.items():
        row = tests[label]
        assert row["status"] == "error" and row["failed"] is True, label
        (message,) = row["failures"]
        assert isinstance(message, str) and part in message, label
        assert message.splitlines()[0] in out, label  # what the terminal printed
    assert tests["test_real.py::test_named_model_raises"]["model"] == "nets:make_broken"
    assert tests["test_real.py::test_fixture_model_raises@backbone"]["model"] == "Broken"

    for name in ("r.md", "summary.md", "r.html"):
        text = (project.root / name).read_text()
        assert "5 profiles: 4 error, 1 ok" in text, name
        for part in expected.values():
            assert _as_shown(part, name) in text, (name, part)
    annotations = [line for line in result.outlines if line.startswith("::error ")]
    assert len(annotations) == 4
