"""The base side of paired timing: which commit CI pairs with, and why a base cannot be timed.

Real git repositories in temporary folders; no model is timed here (the pytester test does)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from history_repo import GitRepo, git
from torch import nn

from pytest_modelprof.ci import AUTO
from pytest_modelprof.history.git import Repo
from pytest_modelprof.history.paired import (
    PairedBase,
    TimingProcess,
    ci_base_ref,
    open_paired_base,
    session_base,
)
from pytest_modelprof.runtime.paired import PairedUnavailable


def _repo(root: Path) -> GitRepo:
    repo = GitRepo.create(root)
    (root / "a.txt").write_text("1\n")
    repo.commit("one")
    (root / "a.txt").write_text("2\n")
    repo.commit("two")
    return repo


def test_ci_pairs_a_pull_request_with_its_merge_base_and_nothing_elsewhere(tmp_path: Path) -> None:
    repo = _repo(tmp_path / "r")
    git(repo.root, "checkout", "-q", "-b", "feature", repo.commits[0])
    (repo.root / "b.txt").write_text("feature\n")
    repo.commit("feature")
    event = tmp_path / "event.json"
    event.write_text(json.dumps({"pull_request": {"base": {"sha": repo.commits[1]}}}))
    env = {"GITHUB_ACTIONS": "true", "GITHUB_EVENT_PATH": str(event)}
    assert ci_base_ref(env, repo.root) == repo.commits[0]  # the merge base, not main's tip
    assert ci_base_ref({}, repo.root) is None  # outside GitHub Actions: off
    assert ci_base_ref({"GITHUB_ACTIONS": "true"}, repo.root) is None  # a push: off
    # Only the target branch's name: its remote-tracking ref, here missing, is passed on.
    assert ci_base_ref({"GITHUB_ACTIONS": "true", "GITHUB_BASE_REF": "main"}, repo.root) == (
        "origin/main"
    )


def test_an_unknown_base_is_said_and_leaves_no_worktree(tmp_path: Path) -> None:
    repo = _repo(tmp_path / "r")
    before = git(repo.root, "worktree", "list", "--porcelain")
    base = PairedBase(Repo(repo.root), "nope")
    with pytest.raises(PairedUnavailable, match="no base at nope: unknown REF 'nope'"):
        base.measure("m:build", input_shape=None, device=None, rounds=10, tolerance=0.1)
    base.close()
    assert git(repo.root, "worktree", "list", "--porcelain") == before


def test_a_module_cannot_be_built_at_the_base_and_outside_git_nothing_can(
    tmp_path: Path,
) -> None:
    repo = _repo(tmp_path / "r")
    base = PairedBase(Repo(repo.root), repo.commits[0])
    with pytest.raises(PairedUnavailable, match="passes a module, not a model name"):
        base.measure(nn.Linear(2, 2), input_shape=None, device=None, rounds=10, tolerance=0.1)
    outside = open_paired_base("HEAD~1", tmp_path / "not-a-repo")
    with pytest.raises(PairedUnavailable, match="no base at HEAD~1"):
        outside.measure("m:build", input_shape=None, device=None, rounds=10, tolerance=0.1)


def test_auto_is_silent_outside_a_repository_but_an_explicit_ref_is_not(
    tmp_path: Path,
) -> None:
    event = tmp_path / "event.json"
    event.write_text(json.dumps({"pull_request": {"base": {"sha": "0" * 40}}}))
    env = {"GITHUB_ACTIONS": "true", "GITHUB_EVENT_PATH": str(event)}
    (tmp_path / "project").mkdir()
    assert session_base(AUTO, tmp_path / "project", env) is None
    close = session_base("HEAD~1", tmp_path / "project", {})
    assert close is not None
    close()


def test_no_ref_is_off_even_on_a_pull_request(tmp_path: Path) -> None:
    """Pairing is opt-in: a pull request in GitHub Actions starts no base without ``auto``."""
    repo = _repo(tmp_path / "r")
    event = tmp_path / "event.json"
    event.write_text(json.dumps({"pull_request": {"base": {"sha": repo.commits[0]}}}))
    env = {"GITHUB_ACTIONS": "true", "GITHUB_EVENT_PATH": str(event)}
    assert session_base(None, repo.root, env) is None
    close = session_base(AUTO, repo.root, env)
    assert close is not None
    close()


def test_one_process_builds_the_model_from_each_commit_s_own_code(tmp_path: Path) -> None:
    """The same module name means the base's file for the base side and the head's for the
    head, in one process, however often either is rebuilt."""
    trees = {}
    for side, width in (("base", 4), ("head", 8)):
        tree = tmp_path / side
        tree.mkdir()
        (tree / "twotrees_model.py").write_text(
            f"import torch.nn as nn\n\n\ndef build():\n    return nn.Linear(4, {width})\n"
        )
        trees[side] = tree
    path = [p for p in sys.path if p]
    worker = TimingProcess(tmp_path, path, tmp_path / "timing.log")
    try:
        answer = worker.ask(
            op="load",
            model="twotrees_model:build",
            input_shape=[2, 4],
            sides={s: {"path": [str(t), *path], "root": str(t)} for s, t in trees.items()},
        )
        assert answer["ok"], answer
        assert answer["params"] == {"base": 4 * 4 + 4, "head": 4 * 8 + 8}
        times = worker.rounds(["base", "head", "head", "base"], 2, fresh=True)
        assert len(times) == 4 and all(t > 0 for t in times)
        # Rebuilt in the other order, each side still gets its own file.
        again = worker.ask(
            op="load",
            model="twotrees_model:build",
            input_shape=[2, 4],
            sides={
                s: {"path": [str(t), *path], "root": str(t)} for s, t in reversed(trees.items())
            },
        )
        assert again["params"] == answer["params"]
        broken = worker.ask(
            op="load",
            model="twotrees_model:nope",
            input_shape=[2, 4],
            sides={s: {"path": [str(t), *path], "root": str(t)} for s, t in trees.items()},
        )
        assert not broken["ok"] and broken["side"] == "base" and "nope" in broken["error"]
    finally:
        worker.close()


def test_a_model_new_at_the_head_cannot_be_timed_at_the_base_and_says_which_commit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = _repo(tmp_path / "r")
    (repo.root / "newmodel_paired.py").write_text(
        "import torch.nn as nn\n\n\ndef build():\n    return nn.Linear(4, 4)\n"
    )
    repo.commit("a new model")
    monkeypatch.chdir(repo.root)
    base = PairedBase(Repo(repo.root), repo.commits[1])
    try:
        with pytest.raises(PairedUnavailable) as info:
            base.measure(
                "newmodel_paired:build", input_shape=[2, 4], device=None, rounds=10, tolerance=0.1
            )
    finally:
        base.close()
    text = str(info.value)
    assert text.startswith(f"newmodel_paired:build does not build at base {repo.commits[1][:12]}")
    assert "newmodel_paired" in text.split(":", 2)[-1]  # the import error itself follows
