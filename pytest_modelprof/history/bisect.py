"""``modelprof bisect``: the first commit whose profile of a test costs more than the good one's.

Each step checks the commit out into a temporary ``git worktree`` (the user's tree and index
are never touched) and runs the test there with pytest, writing its baseline into a temporary
folder: ``python -m pytest TEST --modelprof-update-baselines --modelprof-baseline-dir=TMP``. The
test's own code at that commit decides the model and its inputs, so what is compared is exactly
what the gate would have measured. A commit whose run fails (it does not build, the test errors
or does not exist there) is skipped, as ``git bisect skip`` does. Each worktree is removed
after its step, and on any way out (an error, Ctrl-C, SIGTERM, SIGHUP) with the step's processes
ended (see :mod:`~pytest_modelprof.history.worktree`); nothing else of the repository is touched.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from pytest_modelprof.baseline.document import BaselineDocument
from pytest_modelprof.baseline.metrics import Metric
from pytest_modelprof.baseline.store import iter_baseline_files
from pytest_modelprof.errors import ModelprofError, close_matches, did_you_mean, suggestion
from pytest_modelprof.history.git import Commit, GitError, Repo, commits, run_git
from pytest_modelprof.history.worktree import detached_worktree, run_group

__all__ = ["StepRunner", "bisect"]

Verdict = Literal["good", "bad", "skip"]


class TestIdError(ModelprofError):
    """The test id names no test at the good commit (a typo): says which are close."""

    __test__ = False  # not a pytest test class, whatever its name


@dataclass(frozen=True)
class Probe:
    """What one step measured at one commit: a value, or why the commit was skipped."""

    commit: Commit
    value: float | None = None
    document: BaselineDocument | None = None
    skipped: str = ""  # why the run failed (the last lines pytest printed)


@dataclass(frozen=True)
class BisectResult:
    good: Probe
    bad: Probe
    first_bad: Probe | None  # None: bad is not worse than good beyond the tolerance
    before: Probe | None  # the last good commit tested before first_bad
    skipped: tuple[Probe, ...]
    undecided: tuple[Commit, ...] = ()  # skips left the first bad among these
    steps: int = 0


def search(count: int, probe: Callable[[int, int], Verdict]) -> tuple[int, list[int], list[int]]:
    """Binary search over candidates ``0..count-1`` (the last one known bad, the good commit
    before them all), ``git bisect`` style: the probe nearest the middle, a skipped one
    replaced by its nearest neighbour (the later one on a tie). ``probe(i, left)`` is told how
    many candidates may still be the first bad one. Returns (first bad, indices probed in
    order, the skipped indices that leave the answer open)."""
    lo, hi = -1, count - 1
    skipped: set[int] = set()
    probed: list[int] = []
    while True:
        between = [i for i in range(lo + 1, hi) if i not in skipped]
        if not between:
            break
        mid = (lo + hi) // 2
        i = min(between, key=lambda k: (abs(k - mid), -k))
        probed.append(i)
        verdict = probe(i, len(between) + 1)  # the known-bad end may still be the first
        if verdict == "skip":
            skipped.add(i)
        elif verdict == "bad":
            hi = i
        else:
            lo = i
    return hi, probed, sorted(i for i in skipped if lo < i < hi)


@dataclass
class StepRunner:
    """Profile ``test`` at a commit: a pytest run in a temporary worktree."""

    repo: Repo
    test: str
    metric: Metric
    name: str | None = None
    subdir: str = ""  # where pytest runs, relative to the top of the tree (the user's cwd)
    pytest_args: Sequence[str] = ()
    timeout: float | None = None
    tmp: Path | None = None  # where the worktrees go (default: the system's temporary folder)
    # The first commit profiled (bisect's good one) is where the test id is checked first.
    _id_checked: bool = field(default=False, init=False, repr=False)

    def command(self, baselines: Path) -> list[str]:
        return [
            sys.executable,
            "-m",
            "pytest",
            self.test,
            "--modelprof-update-baselines",
            f"--modelprof-baseline-dir={baselines}",
            "-p",
            "no:cacheprovider",
            "-q",
            *self.pytest_args,
        ]

    def env(self, tree: Path) -> dict[str, str]:
        # The checked-out tree goes first on the path, so the commit's code is imported, not an
        # editable install of the user's own checkout; a src/ layout too.
        env = dict(os.environ)
        extra = [str(tree)] + ([str(tree / "src")] if (tree / "src").is_dir() else [])
        env["PYTHONPATH"] = os.pathsep.join(extra + [p for p in [env.get("PYTHONPATH")] if p])
        env["PYTHONDONTWRITEBYTECODE"] = "1"
        # A step is not the CI run: it writes no job summary and no annotations.
        for name in ("GITHUB_STEP_SUMMARY", "GITHUB_ACTIONS"):
            env.pop(name, None)
        return env

    def __call__(self, commit: Commit) -> Probe:
        with detached_worktree(
            self.repo, commit.hash, tmp=self.tmp, prefix="modelprof-bisect-"
        ) as wt:
            tree, baselines = wt.path, wt.scratch / "baselines"
            if not (tree / self.subdir).is_dir():
                return Probe(
                    commit,
                    skipped=f"the folder {self.subdir} (where you run "
                    f"bisect) does not exist at this commit",
                )
            if not self._id_checked:
                self._check_id(commit, tree)
                self._id_checked = True
            try:
                done = run_group(
                    self.command(baselines),
                    cwd=tree / self.subdir,
                    env=self.env(tree),
                    timeout=self.timeout,
                )
            except subprocess.TimeoutExpired:
                return Probe(commit, skipped=f"the run took over {self.timeout:g} s")
            if done.returncode != 0:
                return Probe(commit, skipped=_why(done, self.test))
            return self._read(commit, baselines)

    def _check_id(self, commit: Commit, tree: Path) -> None:
        """Refuse a test id that names no test of this commit, with the closest ones, from a
        ``pytest --collect-only`` of its file: a typo must not cost a whole session and then
        be blamed on the commit. A file that does not collect is left to the run to report."""
        file, _, inner = self.test.partition("::")
        where = tree / self.subdir
        path = where / file
        if not path.exists():
            files = sorted(
                p.relative_to(where).as_posix()
                for p in where.rglob("*.py")
                if ".git" not in p.parts
            )
            hint = did_you_mean(file, files, n=3)
            raise TestIdError(
                f"{self.test} is not a test at the good commit {commit.short}: "
                f"there is no file {file}{hint}"
            )
        if not inner:
            return
        command = [
            sys.executable,
            "-m",
            "pytest",
            "--collect-only",
            "-q",
            "-p",
            "no:cacheprovider",
            *self.pytest_args,
            file,
        ]
        done = run_group(command, cwd=where, env=self.env(tree), timeout=self.timeout)
        if done.returncode not in (0, 5):  # 5: no tests collected
            return
        ids = [
            ln.strip().partition("::")[2]
            for ln in done.stdout.splitlines()
            if "::" in ln and not ln.startswith(("ERROR", "="))
        ]
        if any(i == inner or i.startswith((inner + "::", inner + "[")) for i in ids):
            return
        close = close_matches(inner, ids, n=3, cutoff=0.5)
        hint = suggestion(f"{file}::{c}" for c in close) or (
            f"; it collects {len(ids)} tests (pytest --collect-only -q {file})"
        )
        raise TestIdError(
            f"{self.test} is not a test at the good commit {commit.short}: "
            f"{file} has no test {inner!r}{hint}"
        )

    def _read(self, commit: Commit, baselines: Path) -> Probe:
        docs = [
            BaselineDocument.from_json(p.read_text(encoding="utf-8"), source=str(p))
            for p in iter_baseline_files(baselines)
        ]
        if self.name is not None:
            docs = [d for d in docs if d.name == self.name]
        if not docs:
            return Probe(
                commit,
                skipped=f"{self.test} wrote no baseline: it is not a profiled "
                f"test at this commit"
                + (f" (no profile named {self.name!r})" if self.name else ""),
            )
        if len(docs) > 1:
            names = ", ".join(sorted(f"{d.test}@{d.name}" if d.name else d.test for d in docs))
            raise ModelprofError(
                f"{self.test} wrote {len(docs)} baselines ({names}); give one "
                f"test id, and --name NAME for a test with several profiles"
            )
        value = docs[0].metrics.get(self.metric.name)
        if value is None:
            return Probe(
                commit,
                document=docs[0],
                skipped=f"the profile has no "
                f"{self.metric.label} (its test sets no limit that measures it)",
            )
        return Probe(commit, value=value, document=docs[0])


def _why(done: subprocess.CompletedProcess[str], test: str) -> str:
    """``pytest exit code 4: SyntaxError: invalid syntax / 1 error in 0.29s``: the exit code,
    the last error line pytest printed (``E   ...``) and its last line."""
    if "ERROR: not found:" in done.stderr and "E " not in done.stdout:
        return f"pytest exit code {done.returncode}: {test} does not exist at this commit"
    out = [ln.strip() for ln in done.stdout.splitlines() if ln.strip()]
    err = [ln.strip() for ln in done.stderr.splitlines() if ln.strip()]
    errors = [ln[1:].strip() for ln in out + err if ln.startswith("E ")]
    said = [errors[-1]] if errors else []
    said += [ln for ln in (out or err)[-1:] if ln not in said]  # pytest's summary line
    return f"pytest exit code {done.returncode}: " + " / ".join(said)


def _commits(repo: Repo, good: str, bad: str) -> list[Commit]:
    """The first-parent commits after ``good`` up to ``bad``, oldest first."""
    done = run_git(repo.root, "merge-base", "--is-ancestor", good, bad, check=False)
    if done.returncode != 0:
        raise GitError(
            f"the good commit {good[:8]} is not an ancestor of the bad commit "
            f"{bad[:8]}: give --good an older commit of the same history"
        )
    return commits(repo, "--reverse", "--first-parent", f"{good}..{bad}")


def bisect(
    repo: Repo,
    good_ref: str,
    bad_ref: str,
    runner: Callable[[Commit], Probe],
    metric: Metric,
    tolerance: float,
    log: Callable[[str], None] = lambda _: None,
) -> BisectResult:
    """Profile good and bad, then binary-search the commits between them."""
    good_hash, bad_hash = repo.resolve(good_ref), repo.resolve(bad_ref)
    if good_hash == bad_hash:
        raise GitError(f"--good {good_ref} and --bad {bad_ref} are the same commit")
    candidates = _commits(repo, good_hash, bad_hash)
    (good_commit,) = commits(repo, "-1", good_hash)
    log(f"bisect: {len(candidates)} commits after {good_commit.short}; profiling the good commit")
    good = runner(good_commit)
    if good.value is None:
        raise ModelprofError(
            f"cannot profile the good commit {good_commit.short}: "
            f"{good.skipped}. Give --good a commit where the test runs"
        )
    log(
        f"bisect: {good_commit.short} (good): {metric.format(good.value)}; profiling the bad commit"
    )
    bad = runner(candidates[-1])
    if bad.value is None:
        raise ModelprofError(
            f"cannot profile the bad commit {candidates[-1].short}: "
            f"{bad.skipped}. Give --bad a commit where the test runs"
        )
    good_value = good.value

    def worse(p: Probe) -> bool:
        assert p.value is not None
        return metric.worse_by(p.value, good_value) > tolerance

    if not worse(bad):
        return BisectResult(good, bad, None, None, (), steps=2)
    probes: dict[int, Probe] = {len(candidates) - 1: bad}

    def probe(i: int, left: int) -> Verdict:
        log(f"bisect: testing {candidates[i].short} {candidates[i].subject!r} ({left} candidates)")
        p = probes[i] = runner(candidates[i])
        if p.value is None:
            log(f"bisect: skipped {candidates[i].short}: {p.skipped}")
            return "skip"
        verdict: Verdict = "bad" if worse(p) else "good"
        log(f"bisect: {candidates[i].short}: {metric.format(p.value)} ({verdict})")
        return verdict

    first, probed, open_ = search(len(candidates), probe)
    tested_good = [i for i in probed if i < first and probes[i].value is not None]
    before = probes[max(tested_good)] if tested_good else good
    return BisectResult(
        good,
        bad,
        probes[first],
        before,
        skipped=tuple(probes[i] for i in sorted(probes) if probes[i].value is None),
        undecided=tuple(candidates[i] for i in open_),
        steps=2 + len(probed),
    )
