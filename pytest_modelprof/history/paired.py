"""The base commit timed beside the head in the same session: one long-lived process, ABBA.

:class:`PairedBase` checks the base commit out in a detached worktree (:func:`~pytest_modelprof.
history.worktree.detached_worktree`, removed on every way out, the user's tree untouched) on
first use, and starts one timing process (:mod:`~pytest_modelprof.runtime.paired_worker`) that
builds each timed test's model by name twice: from the base's code (the worktree) and from the
head's (the user's tree). It warms both up and alternates blocks between them in ABBA order
until :func:`~pytest_modelprof.runtime.paired.compare_paired_sequential` is decided or reaches
the round cap. Where no base can be timed (a module object instead of a name, a model missing
or broken at the base, an unknown commit) :class:`PairedUnavailable` says why, and the gate
judges against the stored baseline instead. :func:`time_against` does the same once, for
``modelprof bench --against`` and ``modelprof compare OLD NEW --model``.
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

from pytest_modelprof.ci import AUTO, on_github_actions
from pytest_modelprof.errors import ModelprofError
from pytest_modelprof.history.git import Repo, find_repo, run_git
from pytest_modelprof.history.worktree import Worktree, _end_group, detached_worktree
from pytest_modelprof.runtime import paired_worker
from pytest_modelprof.runtime.noise import (
    DEFAULT_MAX_ROUNDS_FACTOR,
    DEFAULT_TOLERANCE,
    LatencyComparison,
)
from pytest_modelprof.runtime.paired import (
    SIDES,
    PairedTiming,
    PairedUnavailable,
    Side,
    abba_sides,
    compare_paired_sequential,
    paired_round_cap,
    use_paired_base,
)

__all__ = [
    "session_base",
    "time_against",
]

#: A block of calls lasts about this long (or as long as building the model, where that takes
#: longer, so rebuilding costs at most half the time): long next to the timer, short next to
#: the drift of a busy machine (both sides get the same number of calls).
BLOCK_MS = 5.0
#: Untimed calls on each side before the first round, as the stored-baseline mode makes.
WARMUP_CALLS = 5
#: Untimed calls after each rebuild.
RELOAD_WARMUP = 1
#: Paired rounds before the first verdict (at most the test's ``timing_rounds``), and between
#: later looks while undecided, up to the stored-baseline mode's cap. A round is a block on each
#: side, many calls: 10 decide a clear case on a quiet machine and on a loaded one (BENCHMARKS.md,
#: "Paired timing").
PAIRED_FIRST = 10
PAIRED_STEP = 10
#: The ``timing_rounds`` of :func:`time_against`: the gate's default, so ``modelprof bench
#: --against`` and ``modelprof compare --model`` judge as the gate does.
PAIRED_ROUNDS = 100


class TimingProcess:
    """The process that times both sides: JSON requests in, JSON answers out, stderr in a file."""

    def __init__(self, cwd: Path, pythonpath: Sequence[str], log: Path) -> None:
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(pythonpath)
        env["PYTHONHASHSEED"] = "0"  # the same dict and set orders in every session
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

    def load(self, model: str, sides: Mapping[str, Mapping[str, Any]], **request: Any) -> float:
        """Build ``model`` for both sides (``sides[side]``: ``path``, ``root``, ``kwargs``, see
        :mod:`~pytest_modelprof.runtime.paired_worker`); the slower build's milliseconds."""
        answer = self.ask(op="load", model=model, sides=dict(sides), **request)
        if not answer.get("ok"):
            raise PairedUnavailable(
                f"{model} does not build at the {answer.get('side') or 'either'} side: "
                f"{answer['error']}"
            )
        return float(answer["build_ms"])

    def rounds(
        self, order: Sequence[Side], calls: int, *, fresh: bool, warmup: int = RELOAD_WARMUP
    ) -> list[float]:
        """One block time per entry of ``order``; each block's model rebuilt first if ``fresh``."""
        answer = self.ask(op="rounds", order=list(order), calls=calls, fresh=fresh, warmup=warmup)
        if not answer.get("ok"):
            raise PairedUnavailable(f"timing failed: {answer['error']}")
        return [float(ms) for ms in answer["ms"]]

    def close(self) -> None:
        stdin: IO[str] | None = self._proc.stdin
        try:
            if stdin is not None:
                stdin.write('{"op": "exit"}\n')
                stdin.close()
        except OSError:
            pass
        _end_group(self._proc)
        if self._proc.stdout is not None:
            self._proc.stdout.close()


def time_paired(
    worker: TimingProcess,
    *,
    base_label: str,
    rounds: int,
    tolerance: float,
    max_rounds: int | None = None,
    build_ms: float = 0.0,
    block_ms: float = BLOCK_MS,
    fresh: bool = True,
    first: int = PAIRED_FIRST,
    step: int = PAIRED_STEP,
) -> tuple[PairedTiming, LatencyComparison]:
    """Warm both sides up (the model loaded), size a block to about ``block_ms`` (at least
    ``build_ms``), then ABBA rounds, one look's worth per request, until the paired verdict is
    decided or the cap is reached: the first look after ``first`` rounds (at most ``rounds``),
    then one every ``step``. The cap is ``max_rounds`` (default 8 x ``rounds``) timed calls of
    the model in all, as :func:`~pytest_modelprof.runtime.paired.paired_round_cap` counts
    them."""
    # The fastest of a few calls sizes the block: one call may have waited for the CPU.
    one = worker.rounds(["head", "base"], WARMUP_CALLS, fresh=False, warmup=WARMUP_CALLS)[0]
    calls = max(1, min(1000, math.ceil(max(block_ms, build_ms) / max(one, 1e-3))))
    first = min(first, rounds)
    max_calls = max_rounds if max_rounds is not None else DEFAULT_MAX_ROUNDS_FACTOR * rounds
    done = [0]

    def measure_rounds(n: int) -> PairedTiming:
        order = [side for i in range(done[0], done[0] + n) for side in abba_sides(i)]
        times = worker.rounds(order, calls, fresh=fresh)
        done[0] += n
        mine = {s: [t for t, o in zip(times, order, strict=True) if o == s] for s in SIDES}
        return PairedTiming(
            base=base_label, base_ms=mine["base"], head_ms=mine["head"], calls=calls
        )

    return compare_paired_sequential(
        measure_rounds,
        rounds=rounds,
        max_rounds=paired_round_cap(max_calls, calls, first),
        tolerance=tolerance,
        first=first,
        step=step,
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
    """The session's base side: worktree and processes made on first use, ended by :meth:`close`.

    The head is the user's tree as it is; with ``head_ref`` it is that commit instead, checked
    out in a second detached worktree (``modelprof compare REF REF``)."""

    def __init__(
        self, repo: Repo, ref: str, *, head_ref: str | None = None, tmp: Path | None = None
    ) -> None:
        self.repo, self.ref, self.head_ref, self._tmp = repo, ref, head_ref, tmp
        self._stack = ExitStack()
        self._worker: tuple[TimingProcess, dict[str, dict[str, Any]]] | None = None
        self.broken: str | None = None
        self.commit = ""
        self.head_commit: str | None = None

    def _checkout(self, ref: str, side: str) -> tuple[str, Worktree]:
        try:
            commit = self.repo.resolve(ref)
            tree = self._stack.enter_context(
                detached_worktree(self.repo, commit, tmp=self._tmp, prefix=f"modelprof-{side}-")
            )
        except ModelprofError as exc:
            shallow = (
                " (a shallow clone: fetch-depth 2 holds a pull request's target, 0 its "
                "merge base; see docs/timing-paired.md)"
                if self._shallow()
                else ""
            )
            self.broken = f"no {side} at {ref}: {exc}{shallow}"
            raise PairedUnavailable(self.broken) from None
        return commit, tree

    def _path(self, tree: Path) -> list[str]:
        """``sys.path`` for code at ``tree``: the entries inside the repository moved there,
        and the working directory last (the CLI's ``pkg.mod:factory`` names)."""
        return _mapped([*sys.path, os.getcwd()], self.repo.root, tree)

    def _start(self) -> tuple[TimingProcess, dict[str, dict[str, Any]]]:
        if self.broken is not None:
            raise PairedUnavailable(self.broken)
        if self._worker is not None:
            return self._worker
        self.commit, base = self._checkout(self.ref, "base")
        head_tree = self.repo.root
        if self.head_ref is not None:
            self.head_commit, head = self._checkout(self.head_ref, "head")
            head_tree = head.path
        sides = {
            "base": {"path": self._path(base.path), "root": str(base.path)},
            "head": {"path": self._path(head_tree), "root": str(head_tree)},
        }
        cwd = Path(_mapped([os.getcwd()], self.repo.root, head_tree)[0])
        worker = TimingProcess(
            cwd if cwd.is_dir() else head_tree, sides["head"]["path"], base.scratch / "timing.log"
        )
        self._stack.callback(worker.close)
        self._worker = (worker, sides)
        return self._worker

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
        worker, sides = self._start()
        try:
            build_ms = worker.load(
                model,
                sides,
                input_shape=list(input_shape or []) or None,
                device=device,
                kwargs=dict(kwargs or {}),
            )
        except PairedUnavailable as exc:
            head = f"{self.head_ref} ({self.head_commit[:12]})" if self.head_commit else "the head"
            text = str(exc).replace("the base side", f"base {self.commit[:12]}", 1)
            raise PairedUnavailable(text.replace("the head side", head, 1)) from None
        return time_paired(
            worker,
            base_label=self.commit,
            rounds=rounds,
            max_rounds=max_rounds,
            tolerance=tolerance,
            build_ms=build_ms,
        )

    def close(self) -> None:
        """End the timing process and remove the worktrees (nothing else of the user's)."""
        self._stack.close()
        self._worker = None


def ci_base_ref(env: Mapping[str, str], root: Path) -> str | None:
    """The merge base of HEAD with a pull request's target, in GitHub Actions; None elsewhere.

    The target's commit comes from the event (``pull_request.base.sha``), else from
    ``GITHUB_BASE_REF`` (``origin/<branch>``). A clone too shallow to hold the merge base gives
    the target itself, so :class:`PairedBase` says what is missing when it cannot build it.
    """
    if not on_github_actions(env):
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


def open_paired_base(ref: str, root: Path, *, head_ref: str | None = None) -> PairedBase:
    """A :class:`PairedBase` for ``ref`` in the repository holding ``root`` (outside one, a base
    that says so on first use)."""
    try:
        return PairedBase(find_repo([root]), ref, head_ref=head_ref)
    except ModelprofError as exc:
        base = PairedBase(Repo(root), ref, head_ref=head_ref)
        base.broken = f"no base at {ref}: {exc}"
        return base


def time_against(
    model: str,
    ref: str,
    *,
    head_ref: str | None = None,
    root: Path,
    input_shape: Sequence[int] | None = None,
    device: str | None = None,
    kwargs: dict[str, Any] | None = None,
    rounds: int = PAIRED_ROUNDS,
    tolerance: float = DEFAULT_TOLERANCE,
) -> tuple[PairedTiming, LatencyComparison]:
    """``model`` timed at ``ref`` and at the head (the tree as it is, or ``head_ref``), paired,
    in one timing process: what ``modelprof bench --against`` and ``modelprof compare REF
    REF`` report. Nothing of the user's changes; a ref that cannot be timed raises
    :class:`PairedUnavailable` saying why."""
    base = open_paired_base(ref, root, head_ref=head_ref)
    try:
        return base.measure(
            model,
            input_shape=input_shape,
            device=device,
            rounds=rounds,
            tolerance=tolerance,
            kwargs=kwargs,
        )
    finally:
        base.close()


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
