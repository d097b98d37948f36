"""Paired timing end to end: both commits timed in one process, and what a broken process says.

Real git repositories and a real timing process; the figures are never compared with a clock,
only counted (rounds per side, the commit each side came from)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from history_repo import GitRepo, git

from pytest_modelprof.history.paired import TimingProcess, time_against, time_paired
from pytest_modelprof.runtime.paired import PairedUnavailable

MODEL = "import torch.nn as nn\n\n\ndef build():\n    return nn.Linear(4, {width})\n"


def _repo(root: Path) -> GitRepo:
    """Commit 0 has no model; commits 1 and 2 build ``pairtimed_model:build`` (4 -> 4, 4 -> 8)."""
    repo = GitRepo.create(root)
    (root / "a.txt").write_text("1\n")
    repo.commit("no model yet")
    for width in (4, 8):
        (root / "pairtimed_model.py").write_text(MODEL.format(width=width))
        repo.commit(f"a model {width} wide")
    return repo


def test_a_ref_is_timed_beside_the_head_round_for_round_and_leaves_no_worktree(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = _repo(tmp_path / "r")
    monkeypatch.chdir(repo.root)
    before = git(repo.root, "worktree", "list", "--porcelain")
    timing, comparison = time_against(
        "pairtimed_model:build", "HEAD~1", root=repo.root, input_shape=[2, 4], rounds=4
    )
    assert timing.base == repo.commits[1]  # the full commit the ref names
    assert timing.rounds >= 4 and len(timing.head_ms) == timing.rounds
    assert timing.calls >= 1
    assert comparison.rounds_current == comparison.rounds_baseline == timing.rounds
    assert comparison.paired_base == repo.commits[1]
    assert git(repo.root, "worktree", "list", "--porcelain") == before
    assert git(repo.root, "status", "--porcelain") == ""  # the user's tree untouched


def test_a_model_missing_at_the_head_ref_names_that_ref_and_its_commit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = _repo(tmp_path / "r")
    monkeypatch.chdir(repo.root)
    with pytest.raises(PairedUnavailable) as info:
        time_against(
            "pairtimed_model:build",
            "HEAD",
            head_ref="HEAD~2",
            root=repo.root,
            input_shape=[2, 4],
            rounds=4,
        )
    assert str(info.value).startswith(
        f"pairtimed_model:build does not build at HEAD~2 ({repo.commits[0][:12]}):"
    )


def _trees(tmp_path: Path) -> dict[str, dict[str, object]]:
    path = [p for p in sys.path if p]
    out: dict[str, dict[str, object]] = {}
    for side, width in (("base", 4), ("head", 8)):
        tree = tmp_path / side
        tree.mkdir()
        (tree / "pairtimed_tree.py").write_text(
            MODEL.format(width=width)
            + "\n\ndef dies():\n    import os, sys\n"
            + "    sys.stderr.write('out of memory while building\\n')\n"
            + "    sys.stderr.flush()\n    os._exit(3)\n"
        )
        out[side] = {"path": [str(tree), *path], "root": str(tree)}
    return out


def test_paired_rounds_alternate_sides_until_a_verdict_or_the_cap(tmp_path: Path) -> None:
    trees = _trees(tmp_path)
    worker = TimingProcess(tmp_path, [p for p in sys.path if p], tmp_path / "timing.log")
    try:
        worker.load("pairtimed_tree:build", trees, input_shape=[2, 4])
        timing, comparison = time_paired(
            worker, base_label="abc", rounds=2, max_rounds=6, tolerance=0.05, first=2, step=2
        )
    finally:
        worker.close()
    assert timing.base == "abc"
    # Looks after 2 rounds, then every 2, at most 6 timed calls in all: less than the first
    # look's blocks, so the first look is the last.
    assert timing.rounds == 2
    assert len(timing.base_ms) == len(timing.head_ms) == comparison.rounds_current
    assert comparison.tolerance == 0.05
    # The block is sized from the call time: a call of this tiny model is far below the ~5 ms
    # block, so a block holds many calls (and never more than the cap).
    assert 1 < timing.calls <= 1000


def test_rounds_before_a_model_is_loaded_are_refused_and_the_process_goes_on(
    tmp_path: Path,
) -> None:
    worker = TimingProcess(tmp_path, [p for p in sys.path if p], tmp_path / "timing.log")
    try:
        with pytest.raises(PairedUnavailable, match="timing failed: unknown request 'rounds'"):
            worker.rounds(["base", "head"], 1, fresh=False)
        with pytest.raises(PairedUnavailable, match="does not build at the base side: .*nope"):
            worker.load("pairtimed_tree:nope", _trees(tmp_path), input_shape=[2, 4])
    finally:
        worker.close()


def test_a_timing_process_that_dies_is_said_with_the_last_words_it_wrote(tmp_path: Path) -> None:
    worker = TimingProcess(tmp_path, [p for p in sys.path if p], tmp_path / "timing.log")
    try:
        with pytest.raises(PairedUnavailable) as info:
            worker.load("pairtimed_tree:dies", _trees(tmp_path), input_shape=[2, 4])
        assert str(info.value) == ("the timing process ended (out of memory while building)")
        # Asked again, it still says it has ended (nothing hangs on a dead pipe).
        with pytest.raises(PairedUnavailable, match="the timing process ended"):
            worker.rounds(["base", "head"], 1, fresh=False)
    finally:
        worker.close()


def test_the_round_cap_counts_timed_calls_of_the_model_as_the_stored_mode_does(
    tmp_path: Path,
) -> None:
    # The same model on both sides and no tolerance: the interval often holds 0 after 6 rounds,
    # and then only the cap stops the rounds (tied block times can decide it earlier, so the
    # arithmetic itself is tested in test_paired.py). A stored round times one call of the
    # model; a paired round times a block of many calls on each side, and uses as much of the
    # cap: 64 calls are less than one block, so the first look is the last.
    trees = _trees(tmp_path)
    worker = TimingProcess(tmp_path, [p for p in sys.path if p], tmp_path / "timing.log")
    try:
        worker.load(
            "pairtimed_tree:build",
            {"base": trees["head"], "head": trees["head"]},
            input_shape=[2, 4],
        )
        timing, _ = time_paired(
            worker, base_label="same", rounds=8, max_rounds=64, tolerance=0.0, first=6, step=2
        )
    finally:
        worker.close()
    assert timing.calls > 32  # a call of this model is far below a block: many calls a block
    # At most max_rounds timed calls in all, and never fewer rounds than the first look's.
    assert timing.rounds == 6
