"""Another commit's code, checked out beside the user's tree and run there.

:func:`detached_worktree` adds a detached ``git worktree`` in a temporary folder of its own and
removes exactly that worktree on every way out: a return, an error, Ctrl-C, SIGTERM or SIGHUP
(what ``timeout``, ``kill``, a closed terminal and a cancelled CI job send). It never runs
``git worktree prune``: that would also unregister a worktree of the user's whose folder is away
for a moment. :func:`run_group` runs a command in a process group of its own and ends the whole
group before it returns, so nothing a step started outlives it. ``modelprof bisect`` runs each
step this way; so can anything that times one commit against another.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import FrameType

from pytest_modelprof.history.git import Repo, run_git

__all__ = ["detached_worktree", "run_group"]

#: Seconds a step's process group gets to end after SIGTERM before it is killed.
GRACE_S = 5.0


class Terminated(SystemExit):
    """SIGTERM or SIGHUP arrived. Raised in the main thread, so every ``finally`` runs; uncaught,
    it ends the process with ``128 + signal`` like a shell reports a killed command."""

    def __init__(self, signum: int) -> None:
        super().__init__(128 + signum)
        self.signum = signum


def _signals() -> list[signal.Signals]:
    return [s for s in (signal.SIGTERM, getattr(signal, "SIGHUP", None)) if s is not None]


def _raise(signum: int, frame: FrameType | None) -> None:
    # The first signal starts the cleanup; a second one must not cut that cleanup short.
    for s in _signals():
        signal.signal(s, signal.SIG_IGN)
    raise Terminated(signum)


@contextmanager
def signals_raise() -> Iterator[None]:
    """Inside the block SIGTERM and SIGHUP raise :class:`Terminated` (in the main thread; from
    another thread this does nothing). The handlers before it come back on a normal exit; while
    a :class:`Terminated` unwinds, further signals stay ignored until the process ends."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {s: signal.signal(s, _raise) for s in _signals()}
    try:
        yield
    except Terminated:
        raise
    except BaseException:
        _restore(previous)
        raise
    _restore(previous)


def _restore(previous: Mapping[signal.Signals, object]) -> None:
    for s, handler in previous.items():
        signal.signal(s, handler)  # type: ignore[arg-type]


@contextmanager
def _signals_held() -> Iterator[None]:
    """SIGTERM and SIGHUP wait until the block is done (cleanup is not cut in half)."""
    if (
        not hasattr(signal, "pthread_sigmask")
        or threading.current_thread() is not threading.main_thread()
    ):
        yield
        return
    old = signal.pthread_sigmask(signal.SIG_BLOCK, _signals())
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


@dataclass(frozen=True)
class Worktree:
    """A commit checked out (detached) for the length of a ``with`` block."""

    path: Path  # the checked-out tree
    scratch: Path  # an empty folder beside it for the run's output, removed with it


@contextmanager
def detached_worktree(
    repo: Repo, commit: str, *, tmp: Path | None = None, prefix: str = "modelprof-"
) -> Iterator[Worktree]:
    """``commit`` checked out in a new temporary folder under ``tmp`` (default: the system's);
    on the way out that worktree is unregistered and its folder deleted, nothing else."""
    with signals_raise():
        folder: Path | None = None
        try:
            folder = Path(tempfile.mkdtemp(prefix=f"{prefix}{commit[:10]}-", dir=tmp))
            tree, scratch = folder / "tree", folder / "scratch"
            scratch.mkdir()
            run_git(repo.root, "worktree", "add", "--detach", "--quiet", str(tree), commit)
            yield Worktree(tree, scratch)
        finally:
            with _signals_held():
                if folder is not None:
                    _remove(repo, folder / "tree")
                    shutil.rmtree(folder, ignore_errors=True)


def _remove(repo: Repo, tree: Path) -> None:
    """Unregister and delete the worktree at ``tree`` alone. Where git cannot (an ``add`` cut
    short leaves it locked or half made), its administrative folder is found by the path it
    records and deleted: the same effect as a prune, limited to this one worktree."""
    # --force twice: a worktree whose add was cut short is still locked ("initializing").
    done = run_git(repo.root, "worktree", "remove", "--force", "--force", str(tree), check=False)
    if done.returncode == 0:
        return
    common = run_git(repo.root, "rev-parse", "--git-common-dir", check=False)
    if common.returncode != 0:
        return
    admin = (repo.root / common.stdout.decode().strip()) / "worktrees"
    for gitdir in admin.glob("*/gitdir") if admin.is_dir() else ():
        recorded = Path(gitdir.read_text(encoding="utf-8", errors="replace").strip())
        if recorded.parent == tree or recorded.parent.resolve() == tree.resolve():
            shutil.rmtree(gitdir.parent, ignore_errors=True)


def run_group(
    command: Sequence[str],
    *,
    cwd: Path,
    env: Mapping[str, str],
    timeout: float | None = None,
) -> subprocess.CompletedProcess[str]:
    """Run ``command`` to its end, output captured, in a process group of its own. The whole
    group (what the command started too) is ended before this returns or raises: on a timeout
    (:class:`subprocess.TimeoutExpired`), an error, Ctrl-C or :class:`Terminated`."""
    with subprocess.Popen(
        list(command),
        cwd=cwd,
        env=dict(env),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    ) as proc:
        try:
            out, err = proc.communicate(timeout=timeout)
        finally:
            with _signals_held():
                _end_group(proc)
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def _end_group(proc: subprocess.Popen[str]) -> None:
    """SIGTERM to the group, a grace period for its leader, then SIGKILL to what is left."""
    if not hasattr(os, "killpg"):  # Windows: no process groups to signal
        proc.kill()
        return
    try:
        os.killpg(proc.pid, signal.SIGTERM)
    except ProcessLookupError:
        return  # the command ended and left nothing running
    try:
        proc.wait(timeout=GRACE_S)
    except subprocess.TimeoutExpired:
        pass
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
