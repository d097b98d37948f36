"""The GitHub workflows: valid against GitHub's schema (offline), clean under zizmor, least
privilege, pinned actions and tools, CPU-only torch with a pip cache, and the gate step run here.
The update, comment and shard workflows have test files of their own (test_workflow_*.py)."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("yaml")

from workflow_support import (  # noqa: E402
    CPU_INDEX,
    REPO,
    WORKFLOWS,
    inputs,
    load,
    run_step,
    step,
    steps,
    workflow,
)

sys.path.insert(0, str(REPO / "tests" / "integration"))
from modelprof_testing import FAKE_ENGINE  # noqa: E402

PINNED = re.compile(r"^[\w.-]+/[\w./-]+@[0-9a-f]{40}$")
REUSABLE = ("modelprof-gate.yml", "modelprof-update-baselines.yml", "modelprof-comment.yml")
#: The release each pinned commit is, from the actions' GitHub release pages (tags -> commits).
RELEASES = {
    "actions/checkout": {"11bd71901bbe5b1630ceea73d27597364c9af683": "v4.2.2"},
    "actions/setup-python": {"0b93645e9fea7318ecaed2b359559ac225c90a2b": "v5.3.0"},
    "actions/upload-artifact": {"ea165f8d65b6e75b540449e92b4886f43607fa02": "v4.6.2"},
    "actions/download-artifact": {"d3f86a106a0bac45b974a628896c90dbdf5c8093": "v4.3.0"},
}


def test_the_expected_workflows_exist() -> None:
    names = {p.name for p in WORKFLOWS}
    assert {"ci.yml", "cost-gate.yml", "cost-comment.yml", *REUSABLE} <= names


def test_workflows_match_githubs_schema() -> None:
    pytest.importorskip("check_jsonschema")
    done = subprocess.run(
        [sys.executable, "-m", "check_jsonschema", "--builtin-schema", "vendor.github-workflows",
         *map(str, WORKFLOWS)],
        capture_output=True, text=True, timeout=120, check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr


def _zizmor() -> str:
    found = shutil.which("zizmor") or shutil.which("zizmor", path=str(Path(sys.executable).parent))
    if found is None:
        pytest.skip("zizmor is not installed (it is in the dev extra)")
    return found


def test_zizmor_finds_nothing_medium_or_high() -> None:
    """`zizmor --offline .github/workflows`: no medium or high finding (ignores carry a why)."""
    done = subprocess.run(
        [_zizmor(), "--offline", "--min-severity", "medium", "--format", "plain",
         str(REPO / ".github" / "workflows")],
        capture_output=True, text=True, timeout=120, check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "No findings to report" in done.stdout, done.stdout


def test_every_zizmor_ignore_says_why() -> None:
    for path in WORKFLOWS:
        lines = path.read_text().splitlines()
        for i, line in enumerate(lines):
            if "zizmor: ignore[" in line:
                before = "\n".join(lines[max(0, i - 4):i])
                assert re.search(r"#\s*\w+", before), f"{path.name}:{i + 1}: say why"


@pytest.mark.parametrize("path", WORKFLOWS, ids=lambda p: p.name)
def test_least_privilege_pinned_cached(path: Path) -> None:
    workflow = load(path)
    reusable = set(workflow["on"]) == {"workflow_call"}
    if path.name != "modelprof-update-baselines.yml":  # see test_workflow_update.py
        assert "permissions" in workflow, "set top-level permissions (least privilege)"
    if not reusable:
        assert "concurrency" in workflow
    for job_name, job in workflow["jobs"].items():
        if "uses" in job:  # a call of a reusable workflow in this repository
            assert job["uses"].startswith("$/.github/workflows/"), job_name  # self-repository
            assert (REPO / job["uses"][2:]).is_file(), job_name
            assert "permissions" in job, f"{job_name}: grant the called workflow what it needs"
            continue
        for s in job["steps"]:
            if "uses" in s:
                assert PINNED.match(s["uses"]), f"{s['uses']}: pin actions to a commit SHA"
            if s.get("uses", "").startswith("actions/checkout@"):
                assert s["with"]["persist-credentials"] is False, job_name  # artipacked
            if s.get("uses", "").startswith("actions/setup-python@"):
                if path.name == "modelprof-comment.yml":
                    # A job with a write token restores no cache (cache poisoning).
                    assert "cache" not in s["with"], job_name
                    continue
                # pip's cache, keyed on the files that declare the dependencies.
                assert s["with"]["cache"] == "pip"
                assert s["with"]["cache-dependency-path"], job_name
            # Inputs reach the shell through env:, never as ${{ }} inside the script (injection).
            assert "${{" not in s.get("run", ""), f"{job_name}: {s.get('name')}"


def test_pins_carry_their_version() -> None:
    """The comment after each pinned SHA names the release that SHA is."""
    for path in WORKFLOWS:
        for line in path.read_text().splitlines():
            found = re.search(r"uses: ([\w-]+/[\w-]+)@([0-9a-f]{40}) # (v\d+\.\d+\.\d+)$", line)
            if re.match(r"\s*(- )?uses: [\w-]+/[\w-]+@", line):
                assert found, line
                action, sha, version = found.groups()
                assert RELEASES[action][sha] == version, line


@pytest.mark.parametrize("path", WORKFLOWS, ids=lambda p: p.name)
def test_step_scripts_parse(path: Path) -> None:
    for s in steps(load(path)):
        if "run" not in s:
            continue
        if s.get("shell") == "python3 {0}":
            compile(s["run"], f"{path.name}: {s.get('name')}", "exec")
            continue
        done = subprocess.run(["bash", "-n", "-c", s["run"]], capture_output=True, text=True,
                              check=False)
        assert done.returncode == 0, f"{s.get('name')}: {done.stderr}"


def test_linters_are_pinned_in_ci() -> None:
    ci = workflow("ci.yml")
    for tool in ("RUFF", "MYPY", "ZIZMOR"):
        assert re.fullmatch(r"\d+\.\d+\.\d+", ci["env"][f"{tool}_VERSION"]), tool
    scripts = "\n".join(s.get("run", "") for s in steps(ci))
    assert '"ruff==$RUFF_VERSION"' in scripts and '"zizmor==$ZIZMOR_VERSION"' in scripts
    assert '"mypy==$MYPY_VERSION"' in scripts
    assert "zizmor --offline" in scripts
    assert not re.search(r"pip install[^\n]*\b(ruff|mypy|zizmor)\b(?!==)", scripts)


def test_ci_tests_the_torch_floor_and_the_newest() -> None:
    """A matrix over torch: the lowest version we support, pinned, and whatever is newest."""
    from packaging.requirements import Requirement
    from packaging.version import Version

    matrix = workflow("ci.yml")["jobs"]["tests"]["strategy"]["matrix"]["include"]
    by_torch = {entry["torch"]: entry["pins"] for entry in matrix}
    assert set(by_torch) == {"2.14.1", "newest"}
    assert "torch==2.14.1" in by_torch["2.14.1"].split() and by_torch["newest"] == ""
    text = (REPO / "pyproject.toml").read_text()
    torch_req = next(Requirement(r) for r in re.findall(r'"(torch[<>=!~][^"]*)"', text))
    assert Version("2.14.1") in torch_req.specifier  # the floor satisfies the requirement
    assert str(torch_req.specifier) == ">=2.14.1"  # and is the floor pyproject declares


def _installs_torch(job: dict[str, Any]) -> bool:
    return any(re.search(r"pip install -e|eval \"\$INSTALL\"", s.get("run", ""))
               for s in job.get("steps", []))


@pytest.mark.parametrize("path", WORKFLOWS, ids=lambda p: p.name)
def test_github_hosted_jobs_install_cpu_only_torch(path: Path) -> None:
    """No GitHub-hosted runner has a GPU: the CPU-only wheels, by default."""
    wf = load(path)
    if path.name == "modelprof-comment.yml":
        # It installs pytest-modelprof --no-deps, with pydantic: no torch at all.
        default = inputs(path.name)["install"]["default"]
        assert "--no-deps" in default and "torch" not in default.replace("pytest-modelprof", "")
        return
    for name, job in wf["jobs"].items():
        if not _installs_torch(job):
            continue
        assert str(job["runs-on"]).startswith("ubuntu-"), name
        if wf.get("env", {}).get("PIP_EXTRA_INDEX_URL") == CPU_INDEX:
            continue
        install = next(s for s in job["steps"] if s.get("id") == "install")
        assert install["env"]["TORCH_INDEX_URL"] == "${{ inputs.torch-index-url }}", name
        assert inputs(path.name)["torch-index-url"]["default"] == CPU_INDEX


@pytest.mark.parametrize("name", ["modelprof-gate.yml", "modelprof-update-baselines.yml"])
def test_the_default_install_is_the_callers_project(name: str) -> None:
    """Not a bare package name: the index may lack it, and whoever registers it runs code here.
    The plugin comes from the caller's own test dependencies."""
    default = inputs(name)["install"]["default"]
    assert "pytest-modelprof" not in default
    assert default == 'python -m pip install -e ".[test]"'
    # Every job installs alike (the gate's merge job too), so they cannot drift apart.
    scripts = {s["run"] for s in steps(workflow(name)) if s.get("id") == "install"}
    assert len(scripts) == 1


def _fake_python(tmp: Path) -> Path:
    """A ``python`` whose ``-m pip`` only logs its arguments and the extra index it would use."""
    bin_dir = tmp / "bin"
    bin_dir.mkdir()
    (bin_dir / "python").write_text(
        "#!/bin/sh\n"
        'if [ "$1" = -m ] && [ "$2" = pip ]; then\n'
        f'  echo "$* | extra index: $PIP_EXTRA_INDEX_URL" >> {tmp / "pip.log"}; exit 0\n'
        "fi\n"
        f'exec "$REAL_PYTHON" "$@"\n')
    (bin_dir / "python").chmod(0o755)
    return bin_dir


def test_the_install_step_uses_the_cpu_index_and_names_a_missing_plugin(tmp_path: Path) -> None:
    install = step("modelprof-gate.yml", "install", job="gate")
    env = {"INSTALL": 'python -m pip install -e ".[test]"', "TORCH_INDEX_URL": CPU_INDEX,
           "REAL_PYTHON": sys.executable}
    done = run_step(install, tmp_path, env, extra_path=_fake_python(tmp_path))
    assert done.returncode == 0, done.stdout + done.stderr
    log = (tmp_path / "pip.log").read_text().splitlines()
    assert log[-1] == f"-m pip install -e .[test] | extra index: {CPU_INDEX}"
    import torch

    if torch.version.cuda:  # this machine's torch is a CUDA build: the step says so
        assert "::warning title=modelprof::a CUDA build of torch" in done.stdout
    # A project whose dependencies lack the plugin: a clear error, not pytest's "unrecognized
    # arguments: --modelprof-report".
    isolated = {**env, "REAL_PYTHON": sys.executable, "PYTHONPATH": "", "PYTHONNOUSERSITE": "1"}
    bare = tmp_path / "bare"
    bare.mkdir()
    venv = subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(bare / "venv")],
                          capture_output=True, text=True, check=False)
    assert venv.returncode == 0, venv.stderr
    isolated["REAL_PYTHON"] = str(bare / "venv" / "bin" / "python")
    done = run_step(install, bare, isolated, extra_path=_fake_python(bare))
    assert done.returncode == 1
    assert "::error title=modelprof::the install command did not install pytest-modelprof" \
        in done.stdout


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
    gate = step("modelprof-gate.yml", "gate")
    env = {"PYTEST_ARGS": "-p no:cacheprovider -q", "REPORT_DIR": "modelprof-report",
           "BASELINE_DIR": "", "SHARDS": "1", "SHARD": "1"}
    update = run_step({"run": gate["run"].replace(
        "python -m pytest", "python -m pytest --modelprof-update-baselines")}, root, env)
    assert update.returncode == 0, update.stdout + update.stderr
    (root / "costs.json").write_text('{"tiny": {"flops": 1200000}}')
    github = {"GITHUB_ACTIONS": "true", "GITHUB_STEP_SUMMARY": str(root / "summary.md"),
              "GITHUB_WORKSPACE": str(root), "GITHUB_SERVER_URL": "https://github.com",
              "GITHUB_REPOSITORY": "o/r", "GITHUB_RUN_ID": "9"}
    done = run_step(gate, root, {**env, **github})
    assert done.returncode == 1, done.stdout + done.stderr  # the regression fails the job
    (annotation,) = [line for line in done.stdout.splitlines() if line.startswith("::error")]
    assert annotation.startswith(
        "::error file=test_m.py,line=3,title=modelprof regression::test_m.py::test_tiny: ")
    assert "+20.0 %25" in annotation and "limit +10.0 %25" in annotation
    assert {p.name for p in (root / "modelprof-report").iterdir()} == {
        "report.html", "results.json", "report.md"}
    assert "| \u274c regressed | `test_m.py::test_tiny` |" in (root / "summary.md").read_text()
