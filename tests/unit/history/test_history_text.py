"""``modelprof history`` as text: it fits the terminal and writes one minus sign."""

from __future__ import annotations

import pytest
from history_repo import GitRepo, scenario

from pytest_modelprof.cli import main


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> GitRepo:
    return scenario(tmp_path_factory.mktemp("history") / "repo")


@pytest.mark.parametrize("columns", [80, 60])
def test_the_history_table_fits_the_terminal(
    repo: GitRepo,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    columns: int,
) -> None:
    monkeypatch.setenv("COLUMNS", str(columns))
    assert main(["history", str(repo.root / "baselines")]) == 0
    lines = capsys.readouterr().out.splitlines()
    wide = [line for line in lines if len(line) > columns]
    assert wide == [], f"{len(wide)} lines wider than {columns}, the widest {max(map(len, wide))}"
    # What had to go is said, and the figures that make a step stay.
    assert any("environment" in line and "left out" in line for line in lines)
    header = lines[lines.index("Largest steps:") + 1].split()
    assert header[:2] == ["test", "metric"] and header[-2:] == ["delta", "change"]
    assert ("commit" in header) == (columns >= 80)  # at 60 the commit goes too
    assert not any("\u2212" in line for line in lines)  # the one minus sign is ASCII
    assert any(" -" in line and "%" in line for line in lines)  # a decrease is in the table
