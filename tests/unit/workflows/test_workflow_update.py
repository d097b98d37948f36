"""The baseline refresh (modelprof-update-baselines.yml): its steps run here, one after the other
as the two jobs run them, on a real pytest project and a local git remote."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("yaml")

from workflow_support import REPO, git, outputs, run_step, step, workflow  # noqa: E402

sys.path.insert(0, str(REPO / "tests" / "integration"))
from modelprof_testing import FAKE_ENGINE  # noqa: E402

NAME = "modelprof-update-baselines.yml"


def _project(root: Path, ini_dir: str | None) -> None:
    """A git project (pushed to ``root/../remote.git``) with one profiled test and baselines."""
    (root / "conftest.py").write_text(FAKE_ENGINE)
    (root / "test_m.py").write_text(
        "import pytest\n\n\n@pytest.mark.profile(model='fake:tiny')\ndef test_tiny():\n    pass\n")
    ini = "[pytest]\n" + (f"modelprof_baseline_dir = {ini_dir}\n" if ini_dir else "")
    (root / "pytest.ini").write_text(ini)
    (root / ".gitignore").write_text("calls.log\n__pycache__/\n")
    (root / "costs.json").write_text('{"tiny": {"flops": 1000}}')
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           "--modelprof-update-baselines"], cwd=root, capture_output=True,
                          text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    remote = root.parent / "remote.git"
    git(root.parent, "init", "-q", "--bare", "-b", "main", str(remote))
    git(root, "init", "-q", "-b", "main")
    for key, value in (("user.name", "t"), ("user.email", "t@example.com")):
        git(root, "config", key, value)
    git(root, "add", ".")
    git(root, "commit", "-q", "-m", "init")
    git(root, "remote", "add", "origin", str(remote))
    git(root, "push", "-q", "origin", "main")


def _regenerate(root: Path, tmp: Path, baseline_dir: str = "") -> dict[str, str]:
    """The regenerate job's two script steps; returns their outputs."""
    out = tmp / "out"
    env = {"PYTEST_ARGS": "-p no:cacheprovider -q", "BASELINE_DIR": baseline_dir,
           "OUT_DIR": str(out), "GITHUB_OUTPUT": str(tmp / "regenerate-output")}
    for step_id in ("regenerate", "where"):
        done = run_step(step(NAME, step_id, job="regenerate"), root, env)
        assert done.returncode == 0, f"{step_id}: {done.stdout}{done.stderr}"
    return outputs(tmp / "regenerate-output")


def _publish(work: Path, tmp: Path, mode: str, baseline_dir: str,
             report_url: str = "https://github.com/o/r/actions/runs/77/artifacts/9"
             ) -> subprocess.CompletedProcess[str]:
    """The publish job's script in a fresh clone ``work`` (as its checkout leaves it)."""
    bin_dir = tmp / "bin"
    bin_dir.mkdir(exist_ok=True)
    (bin_dir / "gh").write_text(
        f'#!/bin/sh\nprintf "%s\\n" "$@" > {tmp / "gh.args"}\n'
        f'while [ "$#" -gt 0 ]; do [ "$1" = --body-file ] && cp "$2" {tmp / "pr-body.md"}; '
        'shift; done\n')
    (bin_dir / "gh").chmod(0o755)
    env = {
        "MODE": mode, "BASELINE_DIR": baseline_dir, "NEW_DIR": str(tmp / "out"),
        "REPORT_URL": report_url, "BASE_BRANCH": "main", "RUN_ID": "77",
        "RUN_URL": "https://github.com/o/r/actions/runs/77", "SERVER_URL": "https://github.com",
        "GH_TOKEN": "x", "RUNNER_TEMP": str(tmp), "GITHUB_STEP_SUMMARY": str(tmp / "summary.md"),
        "GITHUB_OUTPUT": str(tmp / "publish-output"),
    }
    return run_step(step(NAME, "publish", job="publish"), work, env, extra_path=bin_dir)


def _clone(tmp: Path, root: Path) -> Path:
    work = tmp / "work"
    git(tmp, "clone", "-q", str(root.parent / "remote.git"), str(work))
    for key, value in (("user.name", "t"), ("user.email", "t@example.com")):
        git(work, "config", key, value)
    return work


def test_the_baseline_folder_comes_from_the_project(tmp_path: Path) -> None:
    """An ini modelprof_baseline_dir is where the new baselines go, and what gets committed."""
    root = tmp_path / "proj"
    root.mkdir()
    _project(root, "costs/base")
    (root / "costs.json").write_text('{"tiny": {"flops": 2000}}')
    out = _regenerate(root, tmp_path)
    assert out["dir"] == "costs/base"
    assert not (root / "baselines").exists()  # no second folder that the gate never reads
    changed = git(root, "status", "--porcelain", "--untracked-files=all", "--", ".",
                  ":!costs.json")
    assert changed == "M costs/base/test_m/test_tiny.json", changed
    assert (tmp_path / "out" / "baselines" / "test_m" / "test_tiny.json").is_file()

    work = _clone(tmp_path, root)
    done = _publish(work, tmp_path, "commit", out["dir"])
    assert done.returncode == 0, done.stdout + done.stderr
    assert git(root.parent / "remote.git", "show", "main:costs/base/test_m/test_tiny.json") \
        == (root / "costs" / "base" / "test_m" / "test_tiny.json").read_text().strip()


def test_the_baseline_dir_input_overrides_the_project(tmp_path: Path) -> None:
    root = tmp_path / "proj"
    root.mkdir()
    _project(root, None)
    assert (root / "baselines" / "test_m" / "test_tiny.json").is_file()  # the default folder
    out = _regenerate(root, tmp_path, baseline_dir="elsewhere")
    assert out["dir"] == "elsewhere"
    assert (root / "elsewhere" / "test_m" / "test_tiny.json").is_file()


def test_the_pull_request_carries_the_report(tmp_path: Path) -> None:
    root = tmp_path / "proj"
    root.mkdir()
    _project(root, None)
    (root / "costs.json").write_text('{"tiny": {"flops": 3000}}')
    out = _regenerate(root, tmp_path)
    assert out["dir"] == "baselines"
    report = tmp_path / "out" / "report"
    assert {p.name for p in report.iterdir()} == {"report.html", "results.json", "report.md"}

    work = _clone(tmp_path, root)
    done = _publish(work, tmp_path, "pull-request", out["dir"])
    assert done.returncode == 0, done.stdout + done.stderr
    args = (tmp_path / "gh.args").read_text().splitlines()
    assert args[:6] == ["pr", "create", "--base", "main", "--head",
                        "modelprof/update-baselines-77"]
    body = (tmp_path / "pr-body.md").read_text()
    # The body links the uploaded report and holds the Markdown diff of the new baselines.
    assert "[artifact](https://github.com/o/r/actions/runs/77/artifacts/9)" in body
    assert body.rstrip().endswith((report / "report.md").read_text().strip())
    assert "+200.0 %" in body  # FLOPs 1000 -> 3000
    remote = root.parent / "remote.git"
    assert git(remote, "rev-list", "--count", "main") == "1"  # main untouched
    assert git(remote, "show", "modelprof/update-baselines-77:baselines/test_m/test_tiny.json") \
        == (root / "baselines" / "test_m" / "test_tiny.json").read_text().strip()


def test_nothing_to_publish_when_nothing_changed(tmp_path: Path) -> None:
    root = tmp_path / "proj"
    root.mkdir()
    _project(root, None)
    out = _regenerate(root, tmp_path)
    work = _clone(tmp_path, root)
    done = _publish(work, tmp_path, "commit", out["dir"])
    assert done.returncode == 0, done.stdout + done.stderr
    assert outputs(tmp_path / "publish-output") == {"changed": "false"}
    assert git(root.parent / "remote.git", "rev-list", "--count", "main") == "1"


def test_a_baseline_folder_outside_the_repository_is_refused(tmp_path: Path) -> None:
    root = tmp_path / "proj"
    root.mkdir()
    _project(root, "../outside")
    env = {"PYTEST_ARGS": "-p no:cacheprovider -q", "BASELINE_DIR": "",
           "OUT_DIR": str(tmp_path / "out"), "GITHUB_OUTPUT": str(tmp_path / "o")}
    done = run_step(step(NAME, "where", job="regenerate"), root, env)
    assert done.returncode != 0
    assert "must be a folder inside the repository" in done.stderr


@pytest.mark.parametrize("bad", ["", "."])
def test_publish_never_removes_the_checkout(tmp_path: Path, bad: str) -> None:
    root = tmp_path / "proj"
    root.mkdir()
    _project(root, None)
    work = _clone(tmp_path, root)
    (tmp_path / "out" / "baselines").mkdir(parents=True)
    done = _publish(work, tmp_path, "commit", bad)
    assert done.returncode == 1
    assert "no usable baseline folder" in done.stdout
    assert (work / "test_m.py").is_file()


def test_each_mode_asks_only_for_its_permissions() -> None:
    """A `mode: commit` caller grants contents: write alone; nothing here may ask for more."""
    wf = workflow(NAME)
    # A called workflow can only lower what the caller grants: no workflow-level key, and no
    # pull-requests: write anywhere (it would fail a commit-mode caller at start-up).
    assert "permissions" not in wf
    assert wf["jobs"]["regenerate"]["permissions"] == {"contents": "read"}
    assert "permissions" not in wf["jobs"]["publish"]
    callers = workflow("cost-gate.yml")["jobs"]
    assert callers["update-baselines-commit"]["permissions"] == {"contents": "write"}
    assert callers["update-baselines-commit"]["with"]["mode"] == "commit"
    assert callers["update-baselines-pull-request"]["permissions"] == {
        "contents": "write", "pull-requests": "write"}
    # The tests run without the write token: only the publish job has it.
    for s in wf["jobs"]["regenerate"]["steps"]:
        assert "GH_TOKEN" not in s.get("env", {}) and "token" not in str(s.get("with", {}))


def test_the_regenerate_step_leaves_the_ini_folder_alone_when_not_told() -> None:
    """The old workflow always passed --modelprof-baseline-dir=baselines."""
    script = step(NAME, "regenerate", job="regenerate")["run"]
    assert "--modelprof-baseline-dir=baselines" not in script
    assert workflow(NAME)["on"]["workflow_call"]["inputs"]["baseline-dir"]["default"] == ""


@pytest.mark.parametrize(("mode", "status"), [("commit", 0), ("pull-request", 0), ("push", 2)])
def test_a_bad_mode_stops_before_the_tests_run(tmp_path: Path, mode: str, status: int) -> None:
    done = run_step(step(NAME, "mode", job="regenerate"), tmp_path, {"MODE": mode})
    assert done.returncode == status
    if status:
        assert "mode must be commit or pull-request, got 'push'" in done.stdout


@pytest.mark.parametrize("bad", ["../outside", "baselines/../../outside", "./..", "..",
                                 "baselines/..", "link"])
def test_publish_removes_only_a_strict_sub_folder_of_the_checkout(tmp_path: Path,
                                                                  bad: str) -> None:
    """The folder from the regenerate job is re-checked before ``rm -rf``: relative, no ``..``,
    strictly inside the checkout (symlinks resolved), not the working directory or above it."""
    root = tmp_path / "proj"
    root.mkdir()
    _project(root, None)
    work = _clone(tmp_path, root)
    (tmp_path / "out" / "baselines").mkdir(parents=True)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep.txt").write_text("the user's file")
    (work / "link").symlink_to(outside)
    done = _publish(work, tmp_path, "commit", bad)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "must be a folder strictly inside the checkout" in done.stdout
    assert (outside / "keep.txt").read_text() == "the user's file"
    assert (work / "test_m.py").is_file() and (work / "baselines").is_dir()
