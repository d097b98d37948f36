"""``modelprof compare REF REF --model`` and ``modelprof bench --against REF`` in a real git
repository: the model timed at two commits, paired, and nothing of the user's changed."""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from pytest_modelprof.cli import main

# Twice the work at the slow commit: far beyond the 8 % limit, so a verdict the paired rounds
# give on a busy machine in a few rounds.
MODEL = """
import torch.nn as nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(*[nn.Linear(256, 256) for _ in range({layers})])

    def forward(self, x):
        return self.body(x)


def build():
    return Net()
"""


# Ten rounds before the first look: enough for twice the work, and cheap.
PAIRED = ["--model", "pairedcli_model:build", "--input-shape", "64,256", "--rounds", "10"]


def _git(repo: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True, check=True)
    return done.stdout


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A repository with a model of 2 layers (tag ``fast``), then of 4 (``slow``, HEAD), an
    uncommitted file and a worktree of the user's own."""
    for key in ("GIT_AUTHOR_NAME", "GIT_COMMITTER_NAME"):
        monkeypatch.setenv(key, "t")
    for key in ("GIT_AUTHOR_EMAIL", "GIT_COMMITTER_EMAIL"):
        monkeypatch.setenv(key, "t@x")
    root = tmp_path / "project"
    root.mkdir()
    _git(root, "init", "-q", "-b", "work")
    for layers, tag in ((2, "fast"), (4, "slow")):
        (root / "pairedcli_model.py").write_text(MODEL.format(layers=layers))
        _git(root, "add", "-A")
        _git(root, "commit", "-qm", f"{layers} layers")
        _git(root, "tag", tag)
    _git(root, "worktree", "add", "-q", str(tmp_path / "users-own"), "fast")
    (root / "notes.txt").write_text("uncommitted work of the user's\n")
    monkeypatch.chdir(root)
    monkeypatch.syspath_prepend(str(root))  # as `PYTHONPATH=. modelprof bench ...` would
    yield root
    sys.modules.pop("pairedcli_model", None)


def _state(repo: Path) -> tuple[str, str, str, str, str]:
    """What of the user's a run must not change: worktrees, branch, index, status, files."""
    return (
        _git(repo, "worktree", "list", "--porcelain"),
        _git(repo, "rev-parse", "--abbrev-ref", "HEAD"),
        hashlib.sha256((repo / ".git" / "index").read_bytes()).hexdigest(),
        _git(repo, "status", "--porcelain"),
        (repo / "pairedcli_model.py").read_text() + (repo / "notes.txt").read_text(),
    )


pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which("git") is None, reason="needs git"),
]


def test_compare_two_refs_times_the_model_at_both_paired(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = _state(repo)
    code = main(["compare", "fast", "slow", *PAIRED])
    out = capsys.readouterr().out
    assert code == 1, out
    fast = _git(repo, "rev-parse", "fast").strip()
    assert out.startswith("pairedcli_model:build at slow against fast: regressed: ")
    assert f"paired with base {fast[:12]} in this session" in out
    assert _state(repo) == before  # the two worktrees it made are gone, nothing else moved
    # The other way round the same model is faster: not a regression.
    assert main(["compare", "slow", "fast", *PAIRED]) == 0
    assert "against slow: improved: " in capsys.readouterr().out
    assert _state(repo) == before


def test_bench_against_a_ref_times_the_working_tree_against_it(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = _state(repo)
    bench = "pairedcli_model:build --input-shape 64,256 --rounds 10 --warmup 0 --threads 1"
    code = main(["bench", *bench.split(), "--top", "0", "--json", "--against", "fast"])
    doc = json.loads(capsys.readouterr().out)
    assert code == 1
    against = doc["against"]
    assert against["ref"] == "fast"
    assert against["commit"] == _git(repo, "rev-parse", "fast").strip()
    assert against["verdict"] == "regressed" and against["slowdown"] > 0.08
    assert against["ci_low"] > 0.08 and against["rounds"] >= 10
    assert against["head_ms"] > against["base_ms"] > 0
    assert _state(repo) == before


def test_an_unknown_ref_is_an_error_that_names_it(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = _state(repo)
    code = main(["compare", "fast", "no-such-ref", "--model", "pairedcli_model:build"])
    err = capsys.readouterr().err
    assert code == 2 and "no-such-ref" in err, err
    assert _state(repo) == before
