"""modelprof compare | merge | report: terminal diff, exit codes, re-rendering."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from pytest_modelprof.cli import main

sys.path.insert(0, str(Path(__file__).parent / "report"))
from report_samples import AFTER, BEFORE, make_results  # noqa: E402


@pytest.fixture
def files(tmp_path: Path) -> Path:
    (tmp_path / "old.json").write_text(BEFORE.to_json())
    (tmp_path / "new.json").write_text(AFTER.to_json())
    (tmp_path / "results.json").write_text(make_results().to_json())
    return tmp_path


def test_compare_two_profiles(files: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["compare", str(files / "old.json"), str(files / "new.json"),
                 "--html", str(files / "d.html"), "--markdown", str(files / "d.md"),
                 "--json", str(files / "d.json")])
    out, err = capsys.readouterr()
    assert code == 1  # exact by default, like the gate: any growth regresses
    assert out.startswith("modelprof compare: 1 profile: 1 regressed\n")
    rows = [" ".join(line.split()) for line in out.splitlines()]
    assert "FLOPs 1 MFLOPs 1.4 MFLOPs +400 KFLOPs (+40.0 %) exact regressed" in rows
    assert "  head  " in out and "+300 KFLOPs" in out
    for name in ("d.html", "d.md", "d.json"):
        assert (files / name).is_file() and f"wrote {files / name}" in err


def test_compare_tolerances(files: Path, capsys: pytest.CaptureFixture[str]) -> None:
    old, new = str(files / "old.json"), str(files / "new.json")
    assert main(["compare", old, new, "--max-delta", "50%"]) == 0
    # FLOPs +40 % is over a 10 % FLOPs limit even when the rest may grow by half.
    assert main(["compare", old, new, "--max-delta", "50%", "--limit",
                 "max_flops_delta=10%"]) == 1
    assert main(["compare", old, old]) == 0
    assert main(["compare", old, new, "--limit", "max_bogus=1"]) == 2
    assert "unknown limit max_bogus" in capsys.readouterr().err
    assert main(["compare", old, str(files / "results.json")]) == 2
    assert "cannot compare a ModelProfile with a RunResults" in capsys.readouterr().err


def test_merge_and_report(files: Path, capsys: pytest.CaptureFixture[str]) -> None:
    results = make_results()
    for i, test in enumerate(results.tests):
        part = results.model_copy(update={"tests": [test]})
        (files / f"shard-{i}.json").write_text(part.to_json())
    shards = sorted(str(p) for p in files.glob("shard-*.json"))
    code = main(["merge", *shards, "-o", str(files / "all.json"), "--html",
                 str(files / "all.html")])
    assert code == 1  # one merged profile failed its gate
    assert (files / "all.html").is_file()
    assert main(["report", str(files / "all.json"), "--top", "1"]) == 1
    out = capsys.readouterr().out
    assert out.startswith("modelprof cost report: 3 profiles: 1 regressed, 1 new baseline, 1 ok")
    assert main(["report", str(files / "all.json"), "--markdown", str(files / "r.md")]) == 1
    assert (files / "r.md").read_text().startswith("# modelprof cost report")
    assert main(["report", str(files / "old.json")]) == 2
    assert "not a results file" in capsys.readouterr().err
    assert main(["merge", shards[0], shards[0], "-o", str(files / "x.json")]) == 2


def test_help_has_examples(capsys: pytest.CaptureFixture[str]) -> None:
    for command in ("compare", "merge", "report"):
        assert main([command, "--help"]) == 0
        assert f"modelprof {command} " in capsys.readouterr().out
