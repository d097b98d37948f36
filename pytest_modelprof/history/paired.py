"""The base commit timed beside the head in the same session: two long-lived processes, ABBA.

:class:`PairedBase` checks the base commit out in a detached worktree (:func:`~pytest_modelprof.
history.worktree.detached_worktree`, removed on every way out, the user's tree untouched) on
first use, and starts two worker processes (:mod:`~pytest_modelprof.runtime.paired_worker`): one
importing the head's code (the user's tree), one the base's (the worktree). Each timed test
loads its model by name in both, warms both up, and alternates rounds between them in ABBA
order until :func:`~pytest_modelprof.runtime.paired.compare_paired_sequential` is decided or
reaches the round cap. Where no base can be timed (a module object instead of a name, a model
missing or broken at the base, an unknown commit) :class:`PairedUnavailable` says why, and
the gate judges against the stored baseline instead.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from collections.abc import Callable, Mapping, Sequence
from contextlib import ExitStack
from pathlib import Path
from typing import IO, Any

from pytest_modelprof.errors import ModelprofError
from pytest_modelprof.history.git import Repo, find_repo, run_git
from pytest_modelprof.history.worktree import _end_group, detached_worktree
from pytest_modelprof.runtime import paired_worker
from pytest_modelprof.runtime.noise import LatencyComparison
from pytest_modelprof.runtime.paired import (
    PairedTiming,
    PairedUnavailable,
    abba_sides,
    compare_paired_sequential,
    use_paired_base,
)

__all__ = [
    "session_base",
]

#: ``--modelprof-timing-base auto``: the merge base of a pull request in GitHub Actions, else off.
AUTO = "auto"
#: A block of calls lasts about this long, so a round is long next to the pipe's round trip
#: and short next to the drift of a busy machine (both sides get the same number of calls).
BLOCK_MS = 10.0
#: Untimed calls on each side before the first round, as the stored-baseline mode makes.
WARMUP_CALLS = 5
#: Both sides rebuild their model every this many rounds. Two processes of the same model
#: differed by 10-25 % for a whole session, even with fixed hash seeds and address layout (the
#: memory pages each drew: cache conflicts); rebuilding every 5 rounds brought +0/8/15/30 %
#: heads to +0.0/10.7/18.7/34.5 %, what the same models measured in one process.
RELOAD_EVERY = 5
#: Untimed calls after a rebuild.
RELOAD_WARMUP = 2
#: Linux ``personality`` flag: no address-space layout randomisation (``setarch -R``).
ADDR_NO_RANDOMIZE = 0x0040000


def _same_layout() -> None:
    """In the child before exec: no address-space randomisation (Linux ``personality``), so
    both sides run with the same layout; elsewhere, or where refused, nothing."""
    try:
        import ctypes

        ctypes.CDLL(None).personality(ADDR_NO_RANDOMIZE)
    except (OSError, AttributeError):
        pass


class TimingProcess:
    """One side's process: JSON requests in, JSON answers out, its stderr in a file."""

    def __init__(self, cwd: Path, pythonpath: Sequence[str], log: Path) -> None:
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(pythonpath)
        # Per-process luck must not differ between the sides: with a random hash seed, or a
        # random address layout (ASLR), identical processes differed by 15-80 % in speed on a
        # small model; with both fixed, by under 3 %. The environment is padded to a multiple of
        # 4 KiB as well, so both sides' stacks start at the same offset within a page.
        env["PYTHONHASHSEED"] = "0"
        size = sum(len(k) + len(v) + 2 for k, v in env.items()) + len("MODELPROF_PAD=")
        env["MODELPROF_PAD"] = "x" * (-size % 4096)
        self._log = log
        with log.open("wb") as err:
            self._proc: subprocess.Popen[str] = subprocess.Popen(
                [sys.executable, paired_worker.__file__],
                cwd=cwd,
                env=env,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=err,
                text=True,
                start_new_session=True,
                preexec_fn=_same_layout,
            )

    def ask(self, **request: Any) -> dict[str, Any]:
        stdin, stdout = self._proc.stdin, self._proc.stdout
        assert stdin is not None and stdout is not None
        try:
            stdin.write(json.dumps(request) + "\n")
            stdin.flush()
            line = stdout.readline()
        except (BrokenPipeError, OSError):
            line = ""
        if not line:
            tail = self._log.read_text(encoding="utf-8", errors="replace")[-400:].strip()
            raise PairedUnavailable(f"the timing process ended ({tail or 'no message'})")
        answer: dict[str, Any] = json.loads(line)
        return answer

    def close(self) -> None:
        stdin: IO[str] | None = self._proc.stdin
        try:
            if stdin is not None:
                stdin.write('{"op": "exit"}\n')
                stdin.close()
        except OSError:
            pass
        _end_group(self._proc)


def _time(worker: TimingProcess, calls: int, warmup: int) -> float:
    answer = worker.ask(op="time", calls=calls, warmup=warmup)
    if not answer.get("ok"):
        raise PairedUnavailable(f"timing failed: {answer['error']}")
    return float(answer["ms"])


def _reload(worker: TimingProcess) -> None:
    answer = worker.ask(op="reload")
    if not answer.get("ok"):
        raise PairedUnavailable(f"rebuilding the model failed: {answer['error']}")
    _time(worker, 1, RELOAD_WARMUP)


def time_paired(
    head: TimingProcess,
    base: TimingProcess,
    *,
    base_label: str,
    rounds: int,
    tolerance: float,
    max_rounds: int | None = None,
) -> tuple[PairedTiming, LatencyComparison]:
    """Warm both processes up (their model loaded), size a block to about :data:`BLOCK_MS`,
    then ABBA rounds until the paired verdict is decided or the round cap is reached."""
    # The fastest of a few calls sizes the block: one call may have waited for the CPU.
    one = _time(head, WARMUP_CALLS, WARMUP_CALLS)
    _time(base, WARMUP_CALLS, WARMUP_CALLS)
    calls = max(1, min(1000, math.ceil(BLOCK_MS / max(one, 1e-3))))
    sides = {"head": head, "base": base}
    done = [0]

    def measure_rounds(n: int) -> PairedTiming:
        times: dict[str, list[float]] = {"base": [], "head": []}
        for i in range(done[0], done[0] + n):
            if i and i % RELOAD_EVERY == 0:
                for proc in (base, head):
                    _reload(proc)
            for side in abba_sides(i):
                times[side].append(_time(sides[side], calls, 0))
        done[0] += n
        return PairedTiming(
            base=base_label, base_ms=times["base"], head_ms=times["head"], calls=calls
        )

    return compare_paired_sequential(
        measure_rounds, rounds=rounds, max_rounds=max_rounds, tolerance=tolerance
    )


def _mapped(paths: Sequence[str], root: Path, tree: Path) -> list[str]:
    """``paths`` with every entry inside ``root`` moved to the same place inside ``tree``."""
    out = []
    for entry in paths:
        p = Path(entry or os.getcwd()).resolve()
        try:
            out.append(str(tree / p.relative_to(root.resolve())))
        except ValueError:
            out.append(str(p))
    return out


class PairedBase:
    """The session's base side: worktree and processes made on first use, ended by :meth:`close`."""

    def __init__(self, repo: Repo, ref: str, *, tmp: Path | None = None) -> None:
        self.repo, self.ref, self._tmp = repo, ref, tmp
        self._stack = ExitStack()
        self._workers: dict[str, TimingProcess] | None = None
        self.broken: str | None = None
        self.commit = ""

    def _start(self) -> dict[str, TimingProcess]:
        if self.broken is not None:
            raise PairedUnavailable(self.broken)
        if self._workers is not None:
            return self._workers
        try:
            self.commit = self.repo.resolve(self.ref)
            tree = self._stack.enter_context(
                detached_worktree(self.repo, self.commit, tmp=self._tmp, prefix="modelprof-base-")
            )
        except ModelprofError as exc:
            shallow = (
                " (a shallow clone: fetch-depth 2 holds a pull request's target, 0 its "
                "merge base; see docs/timing-paired.md)"
                if self._shallow()
                else ""
            )
            self.broken = f"no base at {self.ref}: {exc}{shallow}"
            raise PairedUnavailable(self.broken) from None
        here = _mapped(sys.path, self.repo.root, self.repo.root)
        there = _mapped(sys.path, self.repo.root, tree.path)
        cwd = Path(_mapped([os.getcwd()], self.repo.root, tree.path)[0])
        self._workers = {
            "head": TimingProcess(Path.cwd(), here, tree.scratch / "head.log"),
            "base": TimingProcess(
                cwd if cwd.is_dir() else tree.path, there, tree.scratch / "base.log"
            ),
        }
        for worker in self._workers.values():
            self._stack.callback(worker.close)
        return self._workers

    def _shallow(self) -> bool:
        try:
            return self.repo.is_shallow()
        except ModelprofError:
            return False

    def measure(
        self,
        model: object,
        *,
        input_shape: Sequence[int] | None,
        device: str | None,
        rounds: int,
        tolerance: float,
        max_rounds: int | None = None,
        kwargs: dict[str, Any] | None = None,
    ) -> tuple[PairedTiming, LatencyComparison]:
        """Paired rounds of ``model`` (a name both commits can build) and their verdict."""
        if not isinstance(model, str):
            raise PairedUnavailable(
                "the test passes a module, not a model name the base commit can build"
            )
        workers = self._start()
        load = {
            "op": "load",
            "model": model,
            "input_shape": list(input_shape or []) or None,
            "device": device,
            "kwargs": dict(kwargs or {}),
        }
        for side, worker in workers.items():
            answer = worker.ask(**load)
            if not answer.get("ok"):
                where = f"base {self.commit[:12]}" if side == "base" else "the head"
                raise PairedUnavailable(f"{model} does not build at {where}: {answer['error']}")
        return time_paired(
            workers["head"],
            workers["base"],
            base_label=self.commit,
            rounds=rounds,
            max_rounds=max_rounds,
            tolerance=tolerance,
        )

    def close(self) -> None:
        """End both processes and remove the worktree (nothing else of the user's)."""
        self._stack.close()
        self._workers = None


def ci_base_ref(env: Mapping[str, str], root: Path) -> str | None:
    """The merge base of HEAD with a pull request's target, in GitHub Actions; None elsewhere.

    The target's commit comes from the event (``pull_request.base.sha``), else from
    ``GITHUB_BASE_REF`` (``origin/<branch>``). A clone too shallow to hold the merge base gives
    the target itself, so :class:`PairedBase` says what is missing when it cannot build it.
    """
    if env.get("GITHUB_ACTIONS") != "true":
        return None
    target: str | None = None
    event = env.get("GITHUB_EVENT_PATH")
    if event and Path(event).is_file():
        try:
            data = json.loads(Path(event).read_text(encoding="utf-8"))
            target = data.get("pull_request", {}).get("base", {}).get("sha")
        except (OSError, ValueError, AttributeError):
            target = None
    if not target and env.get("GITHUB_BASE_REF"):
        target = f"origin/{env['GITHUB_BASE_REF']}"
    if not target:
        return None
    done = run_git(root, "merge-base", "HEAD", target, check=False)
    merge_base = done.stdout.decode().strip()
    return merge_base if done.returncode == 0 and merge_base else target


def open_paired_base(ref: str, root: Path) -> PairedBase:
    """A :class:`PairedBase` for ``ref`` in the repository holding ``root`` (outside one, a base
    that says so on first use)."""
    try:
        return PairedBase(find_repo([root]), ref)
    except ModelprofError as exc:
        base = PairedBase(Repo(root), ref)
        base.broken = f"no base at {ref}: {exc}"
        return base


def session_base(ref: str | None, root: Path, env: Mapping[str, str]) -> Callable[[], None] | None:
    """Make the session's base side for ``ref`` (``"auto"``: :func:`ci_base_ref`, so on a pull
    request in GitHub Actions only, and there only inside a git repository) the one the gate
    pairs with; returns what ends it, or None when there is none."""
    chosen = ci_base_ref(env, root) if ref == AUTO else ref
    if not chosen:
        return None
    if ref == AUTO and run_git(root, "rev-parse", "--git-dir", check=False).returncode != 0:
        return None  # "auto" outside a repository (a project copied out): off, silently
    base = open_paired_base(chosen, root)
    use_paired_base(base)

    def close() -> None:
        use_paired_base(None)
        base.close()

    return close
