"""--modelprof-timing-base in a real git repository: the head timed against its base commit,
paired, in the same session, while a busy process runs beside it."""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

MODEL = """
import time

import torch.nn as nn

SLOW = {slow}


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 512))

    def forward(self, x):
        start = time.perf_counter_ns()
        out = self.body(x)
        # SLOW more of the call's own time, spun: a fixed share of the model's time under load.
        until = start + int((time.perf_counter_ns() - start) * (1 + SLOW))
        while time.perf_counter_ns() < until:
            pass
        return out


def build():
    return Net()
"""

TESTS = """
import pytest


@pytest.mark.parametrize("k", range({runs}))
@pytest.mark.profile(model="mymodel:build", input_shape=(64, 512), max_latency_delta=0.1,
                     timing_rounds=20)
def test_timed(k):
    pass
"""

RUNS = 5


def _git(repo: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True, check=True)
    return done.stdout


def _commit(repo: Path, slow: float, message: str) -> None:
    (repo / "mymodel.py").write_text(MODEL.format(slow=slow))
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", message)


def _state(repo: Path) -> tuple[str, str, str, str]:
    """What of the user's the run must not change: worktrees, branch, index, status."""
    index = hashlib.sha256((repo / ".git" / "index").read_bytes()).hexdigest()
    return (
        _git(repo, "worktree", "list", "--porcelain"),
        _git(repo, "rev-parse", "--abbrev-ref", "HEAD"),
        index,
        _git(repo, "status", "--porcelain"),
    )


def _latency_rows(report: Path) -> list[dict[str, object]]:
    tests = json.loads(report.read_text())["tests"]
    return [c for t in tests for c in t["checks"] if c["kind"] == "latency"]


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_a_slower_head_fails_paired_under_load_and_an_unchanged_one_passes(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = pytester.path
    for key, value in {
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@x",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@x",
    }.items():
        monkeypatch.setenv(key, value)
    _git(repo, "init", "-q", "-b", "work")
    # What pytester itself writes beside the project for each run.
    (repo / ".gitignore").write_text("stdout\nstderr\nrunpytest-*\n")
    pytester.makepyfile(test_timed=TESTS.format(runs=RUNS))
    _commit(repo, 0.0, "model")
    pytester.runpytest_subprocess("--modelprof-update-baselines").assert_outcomes(passed=RUNS)
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "baselines")
    _git(repo, "worktree", "add", "-q", str(repo.parent / "users-own"), "HEAD")
    _commit(repo, 0.2, "slower")
    (repo / "notes.txt").write_text("uncommitted work of the user's\n")
    before = _state(repo)
    reports = repo.parent
    busy = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        slower = pytester.runpytest_subprocess(
            "--modelprof-timing-base", "HEAD~1", f"--modelprof-json={reports / 'slower.json'}"
        )
        # Nothing of the user's changed: the same worktrees, branch, index bytes and status
        # (an uncommitted file of theirs included); the base's worktree is gone again.
        assert _state(repo) == before
        _commit(repo, 0.0, "back to the base's speed")
        # No flag: on a pull request in GitHub Actions the default pairs with the merge base.
        event = reports / "event.json"
        base_sha = _git(repo, "rev-parse", "HEAD~2").strip()
        event.write_text(json.dumps({"pull_request": {"base": {"sha": base_sha}}}))
        monkeypatch.setenv("GITHUB_ACTIONS", "true")
        monkeypatch.setenv("GITHUB_EVENT_PATH", str(event))
        unchanged = pytester.runpytest_subprocess(f"--modelprof-json={reports / 'same.json'}")
    finally:
        busy.kill()
        busy.wait()
    slower.assert_outcomes(failed=RUNS)
    rows = _latency_rows(reports / "slower.json")
    assert [r["verdict"] for r in rows] == ["regressed"] * RUNS
    assert all("paired with base" in str(r["reason"]) for r in rows)
    assert all("(paired" in str(r["delta_text"]) for r in rows)
    unchanged.assert_outcomes(passed=RUNS)  # 5 runs out of 5
    same = _latency_rows(reports / "same.json")
    assert [r["verdict"] for r in same] == ["ok"] * RUNS
    assert all(
        str(r["detail"]["judged"]).startswith(f"paired with base {base_sha[:8]}")  # type: ignore[index]
        for r in same
    )
    assert "modelprof-base-" not in _git(repo, "worktree", "list")


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_no_base_falls_back_to_the_stored_baseline_and_says_why(
    pytester: pytest.Pytester,
) -> None:
    # Not a git repository: no base can be built, so the stored baseline judges, and says so.
    pytester.makepyfile(mymodel=MODEL.format(slow=0.0), test_timed=TESTS.format(runs=1))
    pytester.runpytest_subprocess("--modelprof-update-baselines").assert_outcomes(passed=1)
    run = pytester.runpytest_subprocess(
        "--modelprof-timing-base", "HEAD~1", "--modelprof-json=r.json"
    )
    (row,) = _latency_rows(pytester.path / "r.json")
    assert str(row["detail"]["judged"]).startswith("stored baseline (no base at HEAD~1")  # type: ignore[index]
    assert "judged against the stored baseline, not paired: no base at HEAD~1" in str(row["reason"])
    assert run.ret in (0, 1)  # the stored-baseline verdict itself is the old gate's
