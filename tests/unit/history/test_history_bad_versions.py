"""A committed version the history cannot read names its source and what is wrong with it;
paths in two repositories are refused with both named."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from history_repo import NET, GitRepo, baseline

from pytest_modelprof.errors import BaselineError
from pytest_modelprof.history.git import GitError, find_repo
from pytest_modelprof.history.versions import read_version

SOURCE = "baselines/net.json@abc123"


def test_a_version_that_is_not_json_is_corrupt_and_says_where() -> None:
    with pytest.raises(BaselineError, match=f"^{SOURCE}: corrupt baseline \\(not valid JSON: "):
        read_version(b"{ not json", source=SOURCE)


def test_a_nan_figure_is_corrupt_with_its_field_path() -> None:
    data = json.loads(baseline(NET, flops=10).to_json())
    text = json.dumps(data).replace('"flops": 10', '"flops": NaN')
    with pytest.raises(BaselineError, match=f"^{SOURCE}: corrupt baseline \\(metrics.flops: "):
        read_version(text.encode(), source=SOURCE)


def test_a_figure_written_as_text_is_corrupt_with_its_field_path() -> None:
    data = json.loads(baseline(NET, flops=10).to_json())
    data["metrics"]["flops"] = "10"
    # Strict, as the gate reads it: "10" is no number, whichever type was meant.
    with pytest.raises(BaselineError, match=f"^{SOURCE}: corrupt baseline \\(metrics.flops.int: "):
        read_version(json.dumps(data).encode(), source=SOURCE)


def test_a_current_version_reads_as_written() -> None:
    version = read_version(baseline(NET, flops=10).to_json().encode(), source=SOURCE)
    assert version.metrics["flops"] == 10 and version.test == NET


def test_paths_in_two_repositories_are_refused_naming_both(tmp_path: Path) -> None:
    one = GitRepo.create(tmp_path / "one")
    two = GitRepo.create(tmp_path / "two")
    with pytest.raises(GitError, match="the paths lie in 2 repositories") as info:
        find_repo([one.root / "baselines", two.root / "baselines"])
    assert str(one.root.resolve()) in str(info.value)
    assert str(two.root.resolve()) in str(info.value)
