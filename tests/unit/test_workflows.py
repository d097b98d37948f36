"""The GitHub workflows: valid against GitHub's schema (offline), least privilege, pinned
actions, and the shell of their steps run here where it can run locally."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

yaml = pytest.importorskip("yaml")

REPO = Path(__file__).resolve().parents[2]
WORKFLOWS = sorted((REPO / ".github" / "workflows").glob("*.yml"))
PINNED = re.compile(r"^[\w.-]+/[\w./-]+@[0-9a-f]{40}$")
sys.path.insert(0, str(REPO / "tests" / "integration"))
from modelprof_testing import FAKE_ENGINE  # noqa: E402


def load(path: Path) -> dict[str, Any]:
    data: dict[Any, Any] = yaml.safe_load(path.read_text())
    if True in data:  # YAML 1.1 reads the key `on` as a boolean
        data["on"] = data.pop(True)
    return data


def steps(workflow: dict[str, Any]) -> list[dict[str, Any]]:
    return [s for job in workflow["jobs"].values() for s in job.get("steps", [])]


def step(path: str, step_id: str) -> dict[str, Any]:
    return next(s for s in steps(load(REPO / path)) if s.get("id") == step_id)


def test_the_expected_workflows_exist() -> None:
    names = {p.name for p in WORKFLOWS}
    assert {"ci.yml", "cost-gate.yml", "modelprof-gate.yml",
            "modelprof-update-baselines.yml"} <= names


def test_workflows_match_githubs_schema() -> None:
    pytest.importorskip("check_jsonschema")
    done = subprocess.run(
        [sys.executable, "-m", "check_jsonschema", "--builtin-schema", "vendor.github-workflows",
         *map(str, WORKFLOWS)],
        capture_output=True, text=True, timeout=120, check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.parametrize("path", WORKFLOWS, ids=lambda p: p.name)
def test_least_privilege_pinned_cached(path: Path) -> None:
    workflow = load(path)
    assert "permissions" in workflow, "set top-level permissions (least privilege)"
    reusable = set(workflow["on"]) == {"workflow_call"}
    if not reusable:
        assert "concurrency" in workflow
    for job_name, job in workflow["jobs"].items():
        if "uses" in job:  # a call of a reusable workflow in this repository
            assert job["uses"].startswith("./.github/workflows/"), job_name
            continue
        for s in job["steps"]:
            if "uses" in s:
                assert PINNED.match(s["uses"]), f"{s['uses']}: pin actions to a commit SHA"
            if s.get("uses", "").startswith("actions/setup-python@"):
                assert s["with"]["cache"] == "pip"
            # Inputs reach the shell through env:, never as ${{ }} inside the script (injection).
            assert "${{" not in s.get("run", ""), f"{job_name}: {s.get('name')}"


def test_pins_carry_their_version() -> None:
    for path in WORKFLOWS:
        for line in path.read_text().splitlines():
            if re.search(r"uses: [\w-]+/[\w-]+@[0-9a-f]{40}", line):
                assert re.search(r"# v\d+\.\d+\.\d+$", line), line


@pytest.mark.parametrize("path", WORKFLOWS, ids=lambda p: p.name)
def test_step_scripts_parse(path: Path) -> None:
    for s in steps(load(path)):
        if "run" in s:
            done = subprocess.run(["bash", "-n", "-c", s["run"]], capture_output=True, text=True,
                                  check=False)
            assert done.returncode == 0, f"{s.get('name')}: {done.stderr}"


def _bash(script: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith("GITHUB_")}
    base["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{base.get('PATH', '')}"
    return subprocess.run(["bash", "-e", "-c", script], cwd=cwd, env={**base, **env},
                          capture_output=True, text=True, timeout=300, check=False)


def test_gate_step_runs(pytester: pytest.Pytester) -> None:
    """The gate step of the reusable workflow on a project whose model just got costlier."""
    pytester.makeconftest(FAKE_ENGINE)
    pytester.makepyfile(test_m="""
        import pytest

        @pytest.mark.profile(model="fake:tiny", max_flops_delta=0.1)
        def test_tiny():
            pass
    """)
    root = Path(pytester.path)
    (root / "costs.json").write_text('{"tiny": {"flops": 1000000}}')
    gate = step(".github/workflows/modelprof-gate.yml", "gate")
    env = {"PYTEST_ARGS": "-p no:cacheprovider -q", "REPORT_DIR": "modelprof-report"}
    update = _bash(gate["run"].replace("python -m pytest", "python -m pytest "
                                       "--modelprof-update-baselines"), root, env)
    assert update.returncode == 0, update.stdout + update.stderr
    (root / "costs.json").write_text('{"tiny": {"flops": 1200000}}')
    github = {"GITHUB_ACTIONS": "true", "GITHUB_STEP_SUMMARY": str(root / "summary.md"),
              "GITHUB_WORKSPACE": str(root), "GITHUB_SERVER_URL": "https://github.com",
              "GITHUB_REPOSITORY": "o/r", "GITHUB_RUN_ID": "9"}
    done = _bash(gate["run"], root, {**env, **github})
    assert done.returncode == 1, done.stdout + done.stderr  # the regression fails the job
    assert "::error file=test_m.py,line=3,title=modelprof regression::test_m.py::test_tiny: " \
        "FLOPs +20.0 %25 (limit +10.0 %25)" in done.stdout
    assert {p.name for p in (root / "modelprof-report").iterdir()} == {
        "report.html", "results.json", "report.md"}
    assert "| \u274c regressed | `test_m.py::test_tiny` |" in (root / "summary.md").read_text()


def _git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True,
                          check=True).stdout.strip()


@pytest.mark.parametrize("mode", ["commit", "pull-request", "nothing-changed"])
def test_publish_step_runs(tmp_path: Path, mode: str) -> None:
    """The baseline refresh commits to the branch or pushes one and opens a pull request."""
    remote, work = tmp_path / "remote.git", tmp_path / "work"
    _git(tmp_path, "init", "-q", "--bare", "-b", "main", str(remote))
    _git(tmp_path, "init", "-q", "-b", "main", str(work))
    for key, value in (("user.name", "t"), ("user.email", "t@example.com")):
        _git(work, "config", key, value)
    (work / "baselines").mkdir()
    (work / "baselines" / "a.json").write_text("{}\n")
    _git(work, "add", ".")
    _git(work, "commit", "-q", "-m", "init")
    _git(work, "remote", "add", "origin", str(remote))
    _git(work, "push", "-q", "origin", "main")
    if mode != "nothing-changed":
        (work / "baselines" / "a.json").write_text('{"flops": 2}\n')
        (work / "baselines" / "b.json").write_text("{}\n")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "gh").write_text(f'#!/bin/sh\necho "$@" > {tmp_path / "gh.args"}\n')
    (bin_dir / "gh").chmod(0o755)
    publish = step(".github/workflows/modelprof-update-baselines.yml", "publish")
    env = {
        "MODE": "commit" if mode == "nothing-changed" else mode, "BASELINE_DIR": "baselines",
        "BASE_BRANCH": "main", "RUN_ID": "77", "GH_TOKEN": "x",
        "GITHUB_STEP_SUMMARY": str(tmp_path / "summary.md"),
        "GITHUB_OUTPUT": str(tmp_path / "output"),
        "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
    }
    done = _bash(publish["run"], work, env)
    assert done.returncode == 0, done.stdout + done.stderr
    output = (tmp_path / "output").read_text()
    if mode == "nothing-changed":
        assert output == "changed=false\n"
        assert _git(remote, "rev-list", "--count", "main") == "1"
        return
    assert output == "changed=true\n"
    branch = "main" if mode == "commit" else "modelprof/update-baselines-77"
    assert _git(remote, "log", "-1", "--format=%s", branch) == \
        "Update modelprof baselines (run 77)"
    assert _git(remote, "show", f"{branch}:baselines/b.json") == "{}"
    if mode == "pull-request":
        assert _git(remote, "rev-list", "--count", "main") == "1"  # main untouched
        assert (tmp_path / "gh.args").read_text().startswith(
            "pr create --base main --head modelprof/update-baselines-77")
