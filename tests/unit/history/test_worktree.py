"""The temporary worktree of ``modelprof bisect``: it touches nothing of the user's repository but
itself, and is removed on every way out, SIGTERM and SIGHUP included, with its children ended.

Real git repositories in temporary folders; the signals go to a real ``modelprof bisect`` process.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from history_repo import GitRepo, git

import pytest_modelprof
from pytest_modelprof.history.git import Repo
from pytest_modelprof.history.worktree import detached_worktree

PROJECT = Path(pytest_modelprof.__file__).resolve().parents[1]

SLOW_TEST = """
import os
import subprocess
import time


def test_slow():
    child = subprocess.Popen(["sleep", "300"])
    with open(os.environ["STEP_PIDS"], "w") as f:
        f.write(f"{os.getpid()} {child.pid}")
    time.sleep(300)
"""


def _registered(root: Path) -> list[str]:
    """The worktrees git knows of, the main one first."""
    listing = git(root, "worktree", "list", "--porcelain")
    return [ln.split(" ", 1)[1] for ln in listing.splitlines() if ln.startswith("worktree ")]


def _alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie that nobody reaped yet counts as ended)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    status = Path(f"/proc/{pid}/status")
    try:
        return "\nState:\tZ" not in status.read_text()
    except OSError:
        return True


def _repo(root: Path, *, moved_worktree: bool = False) -> GitRepo:
    """A one-commit repository; with the user's own worktree ``mine`` moved to ``away``."""
    repo = GitRepo.create(root / "repo")
    (repo.root / "a.txt").write_text("a\n")
    repo.commit("a")
    if moved_worktree:
        git(repo.root, "worktree", "add", "-q", str(root / "mine"), "-b", "mine")
        (root / "mine").rename(root / "away")
    return repo


def test_a_moved_user_worktree_stays_registered(tmp_path: Path) -> None:
    """A worktree of the user's whose folder is away for a moment is not pruned."""
    repo = _repo(tmp_path, moved_worktree=True)
    before = _registered(repo.root)
    with detached_worktree(Repo(repo.root), repo.commits[0], tmp=tmp_path) as tree:
        assert (tree.path / "a.txt").read_text() == "a\n"
        assert str(tree.path) in _registered(repo.root)
    assert _registered(repo.root) == before
    (tmp_path / "away").rename(tmp_path / "mine")
    assert git(tmp_path / "mine", "status", "--porcelain") == ""  # git still works in it


def test_a_half_made_worktree_is_unregistered_alone(tmp_path: Path) -> None:
    """Where git refuses to remove it (an add cut short: no .git file yet), its own
    registration is deleted, and the user's moved worktree is left registered."""
    repo = _repo(tmp_path, moved_worktree=True)
    before = _registered(repo.root)
    with detached_worktree(Repo(repo.root), repo.commits[0], tmp=tmp_path) as tree:
        (tree.path / ".git").unlink()
    assert _registered(repo.root) == before


def test_removed_on_an_error_and_its_folder_with_it(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    (tmp_path / "tmp").mkdir()
    with (
        pytest.raises(KeyboardInterrupt),
        detached_worktree(Repo(repo.root), repo.commits[0], tmp=tmp_path / "tmp") as tree,
    ):
        (tree.scratch / "out.json").write_text("{}")
        raise KeyboardInterrupt
    assert _registered(repo.root) == [str(repo.root)]
    assert list((tmp_path / "tmp").iterdir()) == []


@pytest.mark.slow  # a bisect process and its pytest step
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP], ids=["SIGTERM", "SIGHUP"])
def test_a_signal_leaves_no_worktree_folder_or_child(tmp_path: Path, sig: signal.Signals) -> None:
    repo = GitRepo.create(tmp_path / "repo")
    (repo.root / "test_slow.py").write_text(SLOW_TEST)
    repo.commit("good")
    (repo.root / "notes.txt").write_text("x\n")
    repo.commit("bad")
    tmp, pids_file = tmp_path / "tmp", tmp_path / "pids"
    tmp.mkdir()
    env = dict(
        os.environ,
        TMPDIR=str(tmp),
        STEP_PIDS=str(pids_file),
        PYTHONPATH=os.pathsep.join([str(PROJECT), os.environ.get("PYTHONPATH", "")]),
    )
    bisect = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "pytest_modelprof.cli",
            "bisect",
            "test_slow.py::test_slow",
            "--good",
            repo.commits[0],
            "--pytest-args",
            "-p no:randomly",
        ],
        cwd=repo.root,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    pids: list[int] = []
    try:
        deadline = time.monotonic() + 300
        while not pids_file.is_file() or len(pids_file.read_text().split()) < 2:
            assert bisect.poll() is None, bisect.communicate()
            assert time.monotonic() < deadline, "the step's test never started"
            time.sleep(0.2)
        pids = [int(p) for p in pids_file.read_text().split()]
        assert len(_registered(repo.root)) == 2  # the step's worktree is there now
        bisect.send_signal(sig)
        _, err = bisect.communicate(timeout=120)
        assert bisect.returncode == 128 + sig, err  # as a shell reports a killed command
        assert _registered(repo.root) == [str(repo.root)]
        assert not (repo.root / ".git" / "worktrees").exists() or not any(
            (repo.root / ".git" / "worktrees").iterdir()
        )
        assert list(tmp.iterdir()) == []
        deadline = time.monotonic() + 30  # the group was signalled; give it a moment to end
        while any(_alive(p) for p in pids) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert [p for p in pids if _alive(p)] == []
    finally:
        for pid in pids:
            if _alive(pid):
                os.kill(pid, signal.SIGKILL)
        if bisect.poll() is None:
            bisect.kill()
            bisect.communicate()
