"""Bad input to ``history`` and ``bisect``: one clear ``modelprof: error:`` line each."""

from __future__ import annotations

from pathlib import Path

import pytest
from history_repo import NET, GitRepo, baseline

from pytest_modelprof.cli import main


@pytest.fixture
def repo(tmp_path: Path) -> GitRepo:
    repo = GitRepo.create(tmp_path / "repo")
    repo.write(NET, baseline(NET, flops=10))
    repo.commit("add net")
    return repo


def _error(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    assert main(list(argv)) == 2
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1, captured.err  # one line, no traceback
    assert lines[0].startswith("modelprof: error: ")
    return lines[0]


def test_a_path_outside_a_git_repository(tmp_path: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    plain = tmp_path / "not-a-repo" / "baselines"
    plain.mkdir(parents=True)
    message = _error(capsys, "history", str(plain))
    assert f"{plain} is not inside a git repository" in message
    assert "run them on a clone" in message


def test_an_unknown_ref(repo: GitRepo, capsys: pytest.CaptureFixture[str]) -> None:
    message = _error(capsys, "history", str(repo.root / "baselines"), "--since", "v9.9")
    assert "unknown REF 'v9.9'" in message and "git log --oneline" in message


def test_a_test_id_with_no_baseline_history(repo: GitRepo,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    message = _error(capsys, "history", str(repo.root / "baselines"), "--test",
                     "tests/test_models.py::test_nett")
    assert "no baseline history for test 'tests/test_models.py::test_nett' under baselines" \
        in message
    assert f"did you mean {NET!r}?" in message


def test_a_folder_with_no_committed_baseline(repo: GitRepo,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    (repo.root / "empty").mkdir()
    message = _error(capsys, "history", str(repo.root / "empty"))
    assert "no committed baseline under empty" in message


def test_a_metric_typo(repo: GitRepo, capsys: pytest.CaptureFixture[str]) -> None:
    message = _error(capsys, "history", str(repo.root / "baselines"), "--metric", "flop")
    assert "unknown metric 'flop'; did you mean 'flops'" in message


def test_bisect_outside_a_repository_and_with_an_unknown_ref(
    repo: GitRepo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    monkeypatch.chdir(plain)
    assert "is not inside a git repository" in _error(capsys, "bisect", "t.py::t", "--good", "x")
    monkeypatch.chdir(repo.root)
    message = _error(capsys, "bisect", "t.py::t", "--good", "nope")
    assert "unknown REF 'nope'" in message
    message = _error(capsys, "bisect", "t.py::t", "--good", "HEAD", "--metric", "peak_activ")
    assert "did you mean 'peak_activations'" in message


def test_the_commands_are_listed_with_examples(capsys: pytest.CaptureFixture[str]) -> None:
    for command in ("history", "bisect"):
        assert main([command, "--help"]) == 0
        text = capsys.readouterr().out
        assert f"Examples:\n  modelprof {command} " in text
        if command == "history":
            from pytest_modelprof.history.build import DEFAULT_METRICS

            assert f"(default: {', '.join(DEFAULT_METRICS)}, where" in " ".join(text.split())
