"""The sharded gate (modelprof-gate.yml with ``shards: N``): the plan, each shard's gate step under
pytest-split, and the report job's merge, run here on a real pytest project."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("yaml")
pytest.importorskip("pytest_split")

from workflow_support import REPO, base_env, outputs, run_step, step, workflow  # noqa: E402

sys.path.insert(0, str(REPO / "tests" / "integration"))
from modelprof_testing import FAKE_ENGINE  # noqa: E402

NAME = "modelprof-gate.yml"
MODELS = ("a", "b", "c", "d")


@pytest.fixture
def project(pytester: pytest.Pytester) -> Path:
    pytester.makeconftest(FAKE_ENGINE)
    pytester.makepyfile(test_m="\n".join(
        f"@__import__('pytest').mark.profile(model='fake:{m}', max_flops_delta=0.1)\n"
        f"def test_{m}():\n    pass\n" for m in MODELS))
    root = Path(pytester.path)
    _costs(root, {})
    done = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q",
                           "--modelprof-update-baselines"], cwd=root, env=base_env(),
                          capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    return root


def _costs(root: Path, grown: dict[str, int]) -> None:
    (root / "costs.json").write_text(json.dumps(
        {m: {"flops": grown.get(m, 1000)} for m in MODELS}))


def _shards(root: Path, tmp: Path, count: int) -> list[subprocess.CompletedProcess[str]]:
    """Each shard's gate step, its report dir then "uploaded" to ``tmp/shards/NAME``."""
    runs = []
    for shard in range(1, count + 1):
        env = {"PYTEST_ARGS": "-p no:cacheprovider -q", "REPORT_DIR": "modelprof-report",
               "BASELINE_DIR": "", "SHARDS": str(count), "SHARD": str(shard)}
        runs.append(run_step(step(NAME, "gate", job="gate"), root, env))
        shutil.move(root / "modelprof-report", tmp / "shards" / f"modelprof-report-shard-{shard}")
    return runs


def _merge(root: Path, tmp: Path, count: int) -> subprocess.CompletedProcess[str]:
    env = {"SHARD_DIR": str(tmp / "shards"), "SHARDS": str(count),
           "REPORT_DIR": "modelprof-report", "GITHUB_STEP_SUMMARY": str(tmp / "summary.md")}
    return run_step(step(NAME, "merge", job="report"), root, env)


def _tests(results: Path) -> list[str]:
    return [t["nodeid"] for t in json.loads(results.read_text())["tests"]]


def test_shards_split_the_tests_and_one_report_merges_them(project: Path,
                                                           tmp_path: Path) -> None:
    (tmp_path / "shards").mkdir()
    _costs(project, {"c": 1500})  # test_c: FLOPs +50 % over a 10 % limit
    runs = _shards(project, tmp_path, 2)
    ran = [_tests(tmp_path / "shards" / f"modelprof-report-shard-{k}" / "results.json")
           for k in (1, 2)]
    # pytest-split gave each shard some tests, none twice, none left out.
    assert all(ran) and not set(ran[0]) & set(ran[1])
    assert sorted(ran[0] + ran[1]) == [f"test_m.py::test_{m}" for m in MODELS]
    in_c = 0 if "test_m.py::test_c" in ran[0] else 1
    assert runs[in_c].returncode == 1 and runs[1 - in_c].returncode == 0

    done = _merge(project, tmp_path, 2)
    assert done.returncode == 1, done.stdout + done.stderr  # one verdict: the regression fails
    report = project / "modelprof-report"
    assert {p.name for p in report.iterdir()} == {"results.json", "report.html", "report.md"}
    merged = json.loads((report / "results.json").read_text())
    assert merged["run"]["shards"] == 2
    assert [t["nodeid"] for t in merged["tests"] if t["failed"]] == ["test_m.py::test_c"]
    summary = (tmp_path / "summary.md").read_text()
    assert summary == (report / "report.md").read_text()
    assert all(f"`test_m.py::test_{m}`" in summary for m in MODELS)


def test_a_clean_merge_passes_and_a_missing_shard_fails(project: Path, tmp_path: Path) -> None:
    (tmp_path / "shards").mkdir()
    runs = _shards(project, tmp_path, 2)
    assert [r.returncode for r in runs] == [0, 0]
    done = _merge(project, tmp_path, 2)
    assert done.returncode == 0, done.stdout + done.stderr
    shutil.rmtree(tmp_path / "shards" / "modelprof-report-shard-2")
    done = _merge(project, tmp_path, 2)
    assert done.returncode == 1
    assert "only 1 of 2 shards wrote results" in done.stdout
    shutil.rmtree(tmp_path / "shards" / "modelprof-report-shard-1")
    done = _merge(project, tmp_path, 2)
    assert done.returncode == 1 and "no shard wrote results" in done.stdout


@pytest.mark.parametrize(("shards", "listed", "sharded"),
                         [("1", "[1]", "false"), ("3", "[1,2,3]", "true")])
def test_the_plan_lists_the_shards(tmp_path: Path, shards: str, listed: str,
                                   sharded: str) -> None:
    env = {"SHARDS": shards, "GITHUB_OUTPUT": str(tmp_path / "out")}
    done = run_step(step(NAME, "plan", job="plan"), tmp_path, env)
    assert done.returncode == 0, done.stderr
    assert outputs(tmp_path / "out") == {"shards": listed, "sharded": sharded}


@pytest.mark.parametrize("bad", ["0", "-1", "2.5", "100", "x"])
def test_the_plan_refuses_a_bad_shard_count(tmp_path: Path, bad: str) -> None:
    done = run_step(step(NAME, "plan", job="plan"), tmp_path,
                    {"SHARDS": bad, "GITHUB_OUTPUT": str(tmp_path / "out")})
    assert done.returncode == 2
    assert f"shards must be a whole number from 1 to 99, got '{bad}'" in done.stdout


def test_this_repository_shards_its_own_gate() -> None:
    gate = workflow("cost-gate.yml")["jobs"]["gate"]
    assert gate["with"]["shards"] == 2
    jobs = workflow(NAME)["jobs"]
    assert jobs["gate"]["strategy"]["matrix"]["shard"] == \
        "${{ fromJSON(needs.plan.outputs.shards) }}"
    # The merge runs after failed shards too (a regression fails a shard), not after a cancel.
    assert jobs["report"]["if"] == \
        "${{ !cancelled() && needs.plan.outputs.sharded == 'true' }}"
    assert "pytest-split" in (REPO / "pyproject.toml").read_text()
