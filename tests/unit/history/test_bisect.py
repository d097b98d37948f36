"""``modelprof bisect``: real pytest runs of a tiny torch model in temporary worktrees."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from history_repo import GitRepo, git

from pytest_modelprof.cli import main
from pytest_modelprof.history.bisect import search

TEST = """
import pytest
from model import make


@pytest.mark.profile()
def test_net(modelprof):
    modelprof(make(), input_shape=(1, 8), mode="meta")
"""

MODEL = """
import torch


def make():
    return torch.nn.Sequential(torch.nn.Linear(8, {width}), torch.nn.ReLU())
"""


def _model(repo: GitRepo, text: str, subject: str) -> str:
    (repo.root / "model.py").write_text(text)
    return repo.commit(subject)


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> GitRepo:
    """good, then five commits: a no-op, one that does not build, a no-op, the one that doubles
    the FLOPs, and a no-op (the bad end)."""
    repo = GitRepo.create(tmp_path_factory.mktemp("bisect") / "repo")
    (repo.root / "test_net.py").write_text(TEST)
    (repo.root / ".gitignore").write_text("__pycache__/\n")
    _model(repo, MODEL.format(width=16), "model at width 16")  # good
    (repo.root / "README.md").write_text("notes\n")
    repo.commit("docs")
    _model(repo, MODEL.format(width=16).replace("def make():", "def make(:"), "typo")
    _model(repo, MODEL.format(width=16), "fix the typo")
    _model(repo, MODEL.format(width=32), "double the width")  # the first bad commit
    (repo.root / "README.md").write_text("more notes\n")
    repo.commit("docs again")
    return repo


def _state(root: Path) -> tuple[str, str, bytes]:
    return (
        git(root, "status", "--porcelain", "--ignored"),
        git(root, "worktree", "list"),
        (root / ".git" / "index").read_bytes(),
    )


@pytest.mark.slow  # five pytest runs, each importing torch
def test_bisect_names_the_commit_that_raised_flops(
    repo: GitRepo, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(repo.root)
    before = _state(repo.root)
    assert main(["bisect", "test_net.py::test_net", "--good", repo.commits[0]]) == 0
    captured = capsys.readouterr()
    first_bad, typo, fixed = repo.commits[4], repo.commits[2], repo.commits[3]
    assert f"first bad commit: {first_bad}\n" in captured.out
    # Linear(8, 16): 2 x 8 x 16 MACs + 16 bias + 16 ReLU = 288 FLOPs; width 32: 576.
    assert (
        f"FLOPs: 288 FLOPs at {fixed[:8]} \u2192 576 FLOPs at {first_bad[:8]} "
        f"(+288 FLOPs, +100.0 %)"
    ) in captured.out
    assert (
        f"skipped {typo[:8]} 'typo': pytest exit code 4: SyntaxError: invalid syntax"
        in captured.out
    )
    assert f"bisect: skipped {typo[:8]}" in captured.err  # said as it happened
    assert "5 profiles run" in captured.out  # good, bad, and three steps
    assert _state(repo.root) == before  # the user's tree, index and worktrees untouched


def test_no_regression_within_the_tolerance(repo: GitRepo) -> None:
    """The search itself over the real history, each step's figure given (no pytest run)."""
    from pytest_modelprof.baseline.metrics import BUILTIN_METRICS
    from pytest_modelprof.history.bisect import Probe, bisect
    from pytest_modelprof.history.git import Commit, Repo

    flops = dict(zip(repo.commits, [288, 288, None, 288, 576, 576], strict=True))

    def runner(commit: Commit) -> Probe:
        value = flops[commit.hash]
        return Probe(commit, value=value, skipped="" if value else "does not build")

    metric = BUILTIN_METRICS.by_name("flops")
    found = bisect(Repo(repo.root), repo.commits[0], "HEAD", runner, metric, tolerance=1.5)
    assert found.first_bad is None and found.steps == 2  # +100 % is within 150 %
    found = bisect(Repo(repo.root), repo.commits[0], "HEAD", runner, metric, tolerance=0.5)
    assert found.first_bad is not None and found.first_bad.commit.hash == repo.commits[4]
    assert [p.commit.hash for p in found.skipped] == [repo.commits[2]]


def test_the_candidates_left_shrink_as_the_search_narrows(repo: GitRepo) -> None:
    """Each step says how many commits may still be the first bad one (no pytest run)."""
    from pytest_modelprof.baseline.metrics import BUILTIN_METRICS
    from pytest_modelprof.history.bisect import Probe, bisect
    from pytest_modelprof.history.git import Commit, Repo

    flops = dict(zip(repo.commits, [288, 288, None, 288, 576, 576], strict=True))

    def runner(commit: Commit) -> Probe:
        value = flops[commit.hash]
        return Probe(commit, value=value, skipped="" if value else "does not build")

    said: list[str] = []
    metric = BUILTIN_METRICS.by_name("flops")
    bisect(Repo(repo.root), repo.commits[0], "HEAD", runner, metric, 0.5, log=said.append)
    counts = [int(n) for line in said for n in re.findall(r"\((\d+) candidates?\)", line)]
    # Five commits after good; the typo (skipped) leaves four, a good step leaves the last two.
    assert counts == [5, 4, 2]


@pytest.mark.slow  # one pytest --collect-only, importing torch
@pytest.mark.parametrize(
    ("test", "said"),
    [
        (
            "test_net.py::test_nett",
            "test_net.py has no test 'test_nett'; did you mean 'test_net.py::test_net'?",
        ),
        ("test_nett.py::test_net", "there is no file test_nett.py; did you mean 'test_net.py'?"),
    ],
)
def test_a_mistyped_test_id_is_refused_before_any_profile(
    repo: GitRepo,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    test: str,
    said: str,
) -> None:
    """Checked against the good commit's collection: no session run, no good commit blamed."""
    monkeypatch.chdir(repo.root)
    assert main(["bisect", test, "--good", repo.commits[0], "--bad", repo.commits[1]]) == 2
    captured = capsys.readouterr()
    assert captured.err.strip().splitlines()[-1] == (
        f"modelprof: error: {test} is not a test at the good commit {repo.commits[0][:8]}: {said}"
    )
    assert "cannot profile" not in captured.err  # the good commit is not blamed


def test_search_is_git_bisect_with_skips() -> None:
    # 0..9, first bad at 6, 4 and 5 do not build: the answer stays open between 4, 5 and 6.
    def verdict(i: int, left: int) -> str:
        return "skip" if i in (4, 5) else ("bad" if i >= 6 else "good")

    first, probed, open_ = search(10, verdict)  # type: ignore[arg-type]
    assert (first, open_) == (6, [4, 5])
    first, probed, open_ = search(10, lambda i, left: "bad" if i >= 3 else "good")
    assert (first, open_) == (3, []) and len(probed) <= 4
