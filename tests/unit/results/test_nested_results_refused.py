"""A results file nested deeper than any the gate writes is refused in one line naming the file
and the field, by every command that reads one: no RecursionError, no traceback."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_modelprof.cli import main
from pytest_modelprof.errors import ReportError
from pytest_modelprof.report.comment import load_results
from pytest_modelprof.results.document import RunResults, load_document


def _deep(results: RunResults, levels: int) -> str:
    """The results file with a row's detail nested ``levels`` deep (the detail is free JSON)."""
    text = results.to_json()
    data = json.loads(text)
    data["tests"][0]["checks"][0]["detail"] = {"x": "@"}
    nested = json.dumps(data).replace('"@"', "[" * levels + "]" * levels, 1)
    return nested


@pytest.mark.parametrize("levels", [200, 100_000])
def test_comment_refuses_deep_nesting_in_one_line(
    results: RunResults, tmp_path: Path, capsys: pytest.CaptureFixture[str], levels: int
) -> None:
    path = tmp_path / "results.json"
    path.write_text(_deep(results, levels))
    code = main(["comment", str(path), "--output", str(tmp_path / "c.md")])
    err = capsys.readouterr().err.strip()
    assert code == 2 and not (tmp_path / "c.md").exists()
    assert len(err.splitlines()) == 1, err
    assert "results.json" in err and "tests[0].checks[0].detail.x" in err, err
    assert "nested deeper than" in err, err


@pytest.mark.parametrize(
    "load", [load_results, load_document, lambda p: RunResults.from_json(Path(p).read_text())]
)
def test_every_reader_refuses_deep_nesting(
    results: RunResults, tmp_path: Path, load: object
) -> None:
    path = tmp_path / "results.json"
    path.write_text(_deep(results, 100_000))
    with pytest.raises(ReportError, match=r"tests\[0\]\.checks\[0\]\.detail\.x.*nested deeper"):
        load(path)  # type: ignore[operator]
