"""``modelprof history --json`` over a real git repository: the figures commit by commit."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from history_repo import NET, NETWORK, OTHER, GitRepo, git, scenario

from pytest_modelprof.cli import main
from pytest_modelprof.history import HistoryDocument, read_history
from pytest_modelprof.schema import dumps_deterministic


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> GitRepo:
    return scenario(tmp_path_factory.mktemp("history") / "repo")


def _history(repo: GitRepo, tmp_path: Path, *args: str) -> dict[str, Any]:
    out = tmp_path / "history.json"
    assert main(["history", str(repo.root / "baselines"), "--output", str(out), *args]) == 0
    data: dict[str, Any] = json.loads(out.read_text())
    return data


def _series(data: dict[str, Any], test: str, metric: str) -> list[dict[str, Any]]:
    (found,) = [t for t in data["tests"] if t["test"] == test]
    (series,) = [s for s in found["series"] if s["metric"] == metric]
    points: list[dict[str, Any]] = series["points"]
    return points


def test_flops_commit_by_commit_through_a_rename_and_a_v1_file(
    repo: GitRepo, tmp_path: Path
) -> None:
    data = _history(repo, tmp_path)
    c = repo.commits
    assert data["schema_version"] == 2
    # Every commit that changed a baseline, in order; "docs only" (c[3]) changed none.
    assert [row["hash"] for row in data["commits"]] == c[:3] + c[4:]
    assert [row["subject"] for row in data["commits"]][:3] == [
        "add net (schema v1 baseline)", "add other", "grow net by 30%"]
    assert data["commits"][0]["date"] == "2026-10-26T07:33:20Z"  # START, UTC
    (network,) = [t for t in data["tests"] if t["test"] == NETWORK]
    assert network["renamed_from"] == [NET]  # followed through the rename
    assert network["path"] == "baselines/tests/test_models/test_network.json"
    assert network["versions"] == 9
    flops = [(p["commit"], p["value"], p["delta"], p["change"])
             for p in _series(data, NETWORK, "flops")]
    assert flops == [
        (c[0], 1_000_000, None, None),  # the schema-v1 file, migrated on read
        (c[2], 1_300_000, 300_000, 0.3),
        (c[4], 1_100_000, -200_000, pytest.approx(-200 / 1300)),
        (c[5], 1_100_000, 0, 0.0),
        (c[6], 1_100_000, 0, 0.0),  # the rename: the test id changed, the figures did not
        (c[7], 2_200_000, 1_100_000, 1.0),
        (c[8], 2_200_000, 0, 0.0),
        (c[10], 2_000_000, -200_000, pytest.approx(-200 / 2200)),
        (c[12], 2_000_000, 0, 0.0),
    ]
    assert [p["value"] for p in _series(data, NETWORK, "params")] == [1000] * 6 + [1200] * 3
    assert [p["value"] for p in _series(data, NETWORK, "peak_activations")][-2:] == [50_000, 60_000]
    other = [(p["commit"], p["value"]) for p in _series(data, OTHER, "flops")]
    assert other == [(c[1], 2_000_000), (c[9], 2_500_000), (c[11], 2_500_000)]


def test_environment_changes_ride_on_the_point_that_saw_them(
    repo: GitRepo, tmp_path: Path
) -> None:
    data = _history(repo, tmp_path)
    memory = _series(data, NETWORK, "traffic")
    changed = [(p["commit"], p["environment"]) for p in memory if p["environment"]]
    assert changed == [(repo.commits[5], ["torch 2.14.1 \u2192 2.15.0"])]
    assert memory[3]["delta"] == 4_000  # the same commit moved traffic by 4 KB
    other = _series(data, OTHER, "flops")
    assert other[-1]["environment"] == ["torch 2.14.1 \u2192 2.15.0"] and other[-1]["delta"] == 0


def test_largest_steps_come_first(repo: GitRepo, tmp_path: Path) -> None:
    steps = _history(repo, tmp_path, "--top", "3")["largest_steps"]
    assert [(s["test"], s["metric"], s["commit"], s["change"], s["worse"]) for s in steps] == [
        (NETWORK, "flops", repo.commits[7], 1.0, True),
        (NETWORK, "flops", repo.commits[2], 0.3, True),
        (OTHER, "flops", repo.commits[9], 0.25, True),
    ]


def test_json_is_deterministic_and_validates(repo: GitRepo, tmp_path: Path) -> None:
    first = read_history([repo.root / "baselines"]).to_json()
    second = read_history([repo.root / "baselines"]).to_json()
    assert first == second and first.endswith("}\n")
    assert HistoryDocument.model_validate_json(first).to_json() == first
    # Sorted keys at every level, floats rounded as in every persisted document, indent 2.
    def sorted_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        assert [k for k, _ in pairs] == sorted(k for k, _ in pairs)
        return dict(pairs)

    data = json.loads(first, object_pairs_hook=sorted_keys)
    assert json.loads(dumps_deterministic(data)) == data
    assert first.startswith('{\n  "commits": [\n    {\n      "date": ')


def test_metric_choice_and_since(repo: GitRepo, tmp_path: Path) -> None:
    data = _history(repo, tmp_path, "--metric", "flops", "--since", repo.commits[7])
    assert data["metrics"] == ["flops"]
    assert {s["metric"] for t in data["tests"] for s in t["series"]} == {"flops"}
    # The state at --since is the first point; then the commits after it.
    assert [(p["commit"], p["value"]) for p in _series(data, NETWORK, "flops")] == [
        (repo.commits[7], 2_200_000), (repo.commits[8], 2_200_000),
        (repo.commits[10], 2_000_000), (repo.commits[12], 2_000_000)]
    assert data["coverage"]["since"] == repo.commits[7]
    assert data["coverage"]["commits_seen"] == 6  # c7 and the five after it


def test_one_test_by_id(repo: GitRepo, tmp_path: Path) -> None:
    data = _history(repo, tmp_path, "--test", "tests/test_models.py::test_other")
    assert [t["test"] for t in data["tests"]] == [OTHER]  # matched without its [large] id
    data = _history(repo, tmp_path, "--test", NET)  # an old id finds the renamed test
    assert [t["test"] for t in data["tests"]] == [NETWORK]


def test_a_deleted_baseline_says_when(tmp_path: Path) -> None:
    from history_repo import baseline

    repo = GitRepo.create(tmp_path / "repo")
    repo.write(NET, baseline(NET, flops=10))
    repo.commit("add")
    repo.path_of(NET).unlink()
    repo.commit("drop net")
    (test,) = read_history([repo.root / "baselines"]).tests
    assert test.removed_in == repo.commits[1]


def test_a_shallow_clone_says_how_much_it_saw(repo: GitRepo, tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    clone = tmp_path / "shallow"
    git(tmp_path, "clone", "-q", "--depth", "4", repo.root.as_uri(), str(clone))
    data = _history(GitRepo(clone), tmp_path)
    assert data["coverage"]["shallow"] is True
    assert data["coverage"]["commits_seen"] == 4
    assert data["coverage"]["first_commit"] == repo.commits[9]
    # The boundary commit holds every file as it was then (network: c8's 2.2 MFLOPs).
    assert [(p["commit"], p["value"]) for p in _series(data, NETWORK, "flops")] == [
        (repo.commits[9], 2_200_000), (repo.commits[10], 2_000_000),
        (repo.commits[12], 2_000_000)]
    assert main(["history", str(clone / "baselines")]) == 0
    text = capsys.readouterr().out
    assert "4 commits changed a baseline under baselines, from " + repo.commits[9][:8] in text
    assert "Shallow clone: only the history fetched was seen" in text


def test_a_corrupt_version_is_a_note_not_a_crash(tmp_path: Path) -> None:
    from history_repo import baseline

    repo = GitRepo.create(tmp_path / "repo")
    repo.write(NET, baseline(NET, flops=10))
    repo.commit("add")
    repo.write(NET, "{not json")
    repo.commit("break it")
    repo.write(NET, baseline(NET, flops=20))
    repo.commit("mend it")
    doc = read_history([repo.root / "baselines"])
    assert [p.value for p in doc.tests[0].series[0].points] == [10, 20]
    (note,) = doc.notes
    assert note.startswith(f"baselines/tests/test_models/test_net.json at {repo.commits[1][:8]}"
                           " skipped: corrupt baseline (not valid JSON")


def test_the_summary_fields_are_the_documents() -> None:
    """history reads a projection of the baseline document: the same types, field by field."""
    from pytest_modelprof.baseline.document import BaselineDocument
    from pytest_modelprof.history.versions import VersionSummary

    for name, summary in VersionSummary.model_fields.items():
        assert summary.annotation == BaselineDocument.model_fields[name].annotation, name


def test_the_whole_repository_and_no_torch(repo: GitRepo, tmp_path: Path) -> None:
    """From the top of the tree the baselines are found all the same, and history (which
    reads committed files) never imports torch."""
    import subprocess
    import sys

    code = ("import sys; from pytest_modelprof.cli import main; "
            "assert main(['history', '.', '--output', sys.argv[1]]) == 0; "
            "assert 'torch' not in sys.modules")
    out = tmp_path / "all.json"
    done = subprocess.run([sys.executable, "-c", code, str(out)], cwd=repo.root,
                          capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    data = json.loads(out.read_text())
    assert data["coverage"]["paths"] == ["."] and len(data["tests"]) == 2


def test_one_baseline_file(repo: GitRepo, tmp_path: Path) -> None:
    out = tmp_path / "one.json"
    path = repo.path_of(OTHER)
    assert main(["history", str(path), "--output", str(out)]) == 0
    data = json.loads(out.read_text())
    assert [t["test"] for t in data["tests"]] == [OTHER]
    assert data["coverage"]["paths"] == ["baselines/tests/test_models/test_other[large].json"]


def test_a_merged_branch_is_one_step_of_the_first_parent_line(tmp_path: Path) -> None:
    from history_repo import baseline

    repo = GitRepo.create(tmp_path / "repo")
    repo.write(NET, baseline(NET, flops=10))
    repo.commit("add")
    git(repo.root, "checkout", "-q", "-b", "feature")
    repo.write(NET, baseline(NET, flops=20))
    repo.commit("grow")
    repo.write(NET, baseline(NET, flops=30))
    repo.commit("grow more")
    git(repo.root, "checkout", "-q", "main")
    (repo.root / "notes.txt").write_text("x")
    repo.commit("elsewhere")
    git(repo.root, "merge", "-q", "--no-ff", "-m", "Merge feature", "feature")
    doc = read_history([repo.root / "baselines"], metrics=["flops"])
    subjects = {c.hash: c.subject for c in doc.commits}
    assert [(subjects[p.commit], p.value) for p in doc.tests[0].series[0].points] == [
        ("add", 10), ("Merge feature", 30)]
