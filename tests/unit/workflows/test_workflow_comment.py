"""The sticky pull-request comment (modelprof-comment.yml): its script runs here against a local
stand-in for GitHub's REST API, with a report the gate step wrote from a real pytest run."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("yaml")

from workflow_support import (  # noqa: E402
    REPO,
    FakeGitHub,
    base_env,
    run_step,
    serve,
    step,
    workflow,
)

sys.path.insert(0, str(REPO / "tests" / "integration"))
from modelprof_testing import FAKE_ENGINE  # noqa: E402

sys.path.insert(0, str(REPO / "tests" / "unit" / "report"))
from report_samples import no_live_markdown, outside_code_spans  # noqa: E402

MARKER = "<!-- modelprof-comment: modelprof-report -->"
SHA_1, SHA_2 = "1" * 40, "2" * 40


def _gate(root: Path, flops: int) -> subprocess.CompletedProcess[str]:
    """The gate step of modelprof-gate.yml, as one job (no shards), in the project ``root``."""
    (root / "costs.json").write_text(
        f'{{"small": {{"flops": 1000}}, "big": {{"flops": {flops}}}}}')
    env = {"PYTEST_ARGS": "-p no:cacheprovider -q", "REPORT_DIR": "modelprof-report",
           "BASELINE_DIR": "", "SHARDS": "1", "SHARD": "1",
           "GITHUB_SERVER_URL": "https://github.com", "GITHUB_REPOSITORY": "o/r",
           "GITHUB_RUN_ID": "42"}
    return run_step(step("modelprof-gate.yml", "gate"), root, env)


@pytest.fixture
def project(pytester: pytest.Pytester) -> Path:
    """Two profiled tests with baselines; the one sorting last alphabetically will regress."""
    pytester.makeconftest(FAKE_ENGINE)
    pytester.makepyfile(test_m="""
        import pytest

        @pytest.mark.profile(model="fake:small")
        def test_a_steady():
            pass

        @pytest.mark.profile(model="fake:big", max_flops_delta=0.1)
        def test_b_grows():
            pass
    """)
    root = Path(pytester.path)
    (root / "costs.json").write_text('{"small": {"flops": 1000}, "big": {"flops": 1000000}}')
    done = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q",
                           "--modelprof-update-baselines"], cwd=root, env=base_env(),
                          capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    return root


def _comment_env(api_url: str, report_dir: Path, head_sha: str, tmp: Path) -> dict[str, str]:
    return {
        "GITHUB_API_URL": api_url, "GITHUB_SERVER_URL": "https://github.com",
        "GITHUB_REPOSITORY": "o/r", "GH_TOKEN": "test-token",
        "GITHUB_STEP_SUMMARY": str(tmp / "summary.md"),
        "REPORT_DIR": str(report_dir), "REPORT_NAME": "modelprof-report",
        "RUN_ID": "42", "RUN_URL": "https://github.com/o/r/actions/runs/42",
        "HEAD_SHA": head_sha, "HEAD_OWNER": "someone", "HEAD_BRANCH": "feature/x&y",
    }


def _api() -> FakeGitHub:
    return FakeGitHub(
        "o/r",
        pulls=[{"number": 7, "head": {"sha": SHA_1, "ref": "feature/x&y", "owner": "someone"}}],
        artifacts=[{"id": 555, "name": "modelprof-report", "run_id": 42},
                   {"id": 556, "name": "other", "run_id": 42}],
    )


def _rendered(results: Path, out: Path) -> str:
    """``modelprof comment RESULTS --output OUT``: the comment's Markdown of a results file."""
    done = subprocess.run(["bash", "-c", 'modelprof comment "$1" --output "$2"', "-",
                           str(results), str(out)], env=base_env(), capture_output=True,
                          text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    return out.read_text()


def test_the_comment_is_the_markdown_report_and_one_per_pull_request(
        project: Path, tmp_path: Path) -> None:
    gate = _gate(project, 1_200_000)
    assert gate.returncode == 1, gate.stdout + gate.stderr  # FLOPs +20 % over a 10 % limit
    report_dir = project / "modelprof-report"
    rendered = _rendered(report_dir / "results.json", tmp_path / "rendered.md")
    post = step("modelprof-comment.yml", "comment")
    api = _api()
    foreign = api.add_comment(7, "someone", MARKER + "\nnot ours")
    with serve(api) as url:
        done = run_step(post, tmp_path, _comment_env(url, report_dir, SHA_1, tmp_path))
    assert done.returncode == 0, done.stdout + done.stderr
    ours = [c for c in api.comments[7] if c["id"] != foreign]
    assert len(ours) == 1
    body = ours[0]["body"]
    # The comment is what `modelprof comment` renders from the gate's results (the Markdown
    # report, escaped and capped), after the marker line, then our links: the artifact and run.
    assert body == (
        f"{MARKER}\n{rendered.strip()}\n\n"
        "[HTML report](https://github.com/o/r/actions/runs/42/artifacts/555) "
        "(artifact `modelprof-report`) \u00b7 [workflow run](https://github.com/o/r/actions/runs/42)\n"
    )
    # Regressed tests first (test_b sorts after test_a), each failed limit with its figures.
    assert body.index("test_m.py::test_b_grows") < body.index("test_m.py::test_a_steady")
    assert "+20.0 %" in body and "+10.0 %" in body and "**regressed**" in body
    assert "Posted the cost report on pull request #7." in (tmp_path / "summary.md").read_text()

    # The next push: the same comment is edited in place; another user's comment is untouched.
    gate = _gate(project, 1_000_000)
    assert gate.returncode == 0, gate.stdout + gate.stderr
    api.pulls[0]["head"]["sha"] = SHA_2
    with serve(api) as url:
        done = run_step(post, tmp_path, _comment_env(url, report_dir, SHA_2, tmp_path))
    assert done.returncode == 0, done.stdout + done.stderr
    assert [c["id"] for c in api.comments[7]] == [foreign, ours[0]["id"]]
    assert api.comments[7][0]["body"] == MARKER + "\nnot ours"
    edited = api.comments[7][1]["body"]
    assert edited.startswith(MARKER + "\n") and "regressed" not in edited.split("\n")[2]
    assert [m for m, _, _ in api.requests].count("POST") == 1
    assert [m for m, _, _ in api.requests].count("PATCH") == 1


def test_no_comment_when_the_pull_request_moved_on(project: Path, tmp_path: Path) -> None:
    """A run for an older commit must not overwrite the report of a newer one."""
    _gate(project, 1_200_000)
    api = _api()
    api.pulls[0]["head"]["sha"] = SHA_2
    with serve(api) as url:
        done = run_step(step("modelprof-comment.yml", "comment"), tmp_path,
                        _comment_env(url, project / "modelprof-report", SHA_1, tmp_path))
    assert done.returncode == 0, done.stdout + done.stderr
    assert api.comments == {}
    assert "no comment" in done.stdout


def test_a_gate_without_a_report_still_gets_a_comment(tmp_path: Path) -> None:
    api = _api()
    with serve(api) as url:
        done = run_step(step("modelprof-comment.yml", "comment"), tmp_path,
                        _comment_env(url, tmp_path / "not-downloaded", SHA_1, tmp_path))
    assert done.returncode == 0, done.stdout + done.stderr
    (comment,) = api.comments[7]
    assert comment["body"].startswith(MARKER + "\n**modelprof**: the cost gate wrote no report")


def test_a_long_report_is_cut_to_fit_a_comment(project: Path, tmp_path: Path) -> None:
    """GitHub refuses a comment over 65,536 characters: cut at a line, say where the rest is."""
    _gate(project, 1_200_000)
    report = project / "modelprof-report"
    data = json.loads((report / "results.json").read_text())
    data["tests"] = [dict(data["tests"][0], nodeid=f"test_m.py::test_{i:04}_" + "x" * 250)
                     for i in range(400)]
    (report / "results.json").write_text(json.dumps(data))
    api = _api()
    with serve(api) as url:
        done = run_step(step("modelprof-comment.yml", "comment"), tmp_path,
                        _comment_env(url, report, SHA_1, tmp_path))
    assert done.returncode == 0, done.stdout + done.stderr
    (comment,) = api.comments[7]
    body = comment["body"]
    assert 50000 < len(body) <= 65536
    assert "(400 profiles, regressions first): the rest is in the HTML report" in body
    assert body.rstrip().endswith("[workflow run](https://github.com/o/r/actions/runs/42)")


def test_a_deleted_fork_gets_no_comment(tmp_path: Path) -> None:
    api = _api()
    with serve(api) as url:
        env = {**_comment_env(url, tmp_path, SHA_1, tmp_path), "HEAD_OWNER": ""}
        done = run_step(step("modelprof-comment.yml", "comment"), tmp_path, env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert api.requests == [] and "head repository is gone" in done.stdout


def test_the_comment_workflow_never_runs_code_from_the_pull_request() -> None:
    """workflow_run with a write token: no checkout; one install, of pytest-modelprof from the
    source the install input pins, before the artifact is downloaded; the artifact is data."""
    wf = workflow("modelprof-comment.yml")
    assert wf["permissions"] == {}
    (job,) = wf["jobs"].values()
    assert job["permissions"] == {"actions": "read", "pull-requests": "write"}
    ids = [s.get("id") for s in job["steps"]]
    assert ids.index("install") < ids.index("download") < ids.index("comment")
    default = wf["on"]["workflow_call"]["inputs"]["install"]["default"]
    assert "--no-deps \"pytest-modelprof @ git+https://github.com/pytest-modelprof/" in default
    for s in job["steps"]:
        assert not s.get("uses", "").startswith("actions/checkout@"), s
        assert "cache" not in s.get("with", {}), s
        if s.get("id") == "install":
            assert s["env"] == {"INSTALL": "${{ inputs.install }}"}
            continue
        script = s.get("run", "")
        for word in ("pip install", "-m pytest", "modelprof report", "modelprof merge", "eval",
                     "exec(", "os.system", "git ", "report.md"):
            assert word not in script, f"{s.get('name')}: {word!r}"
        # The one command it runs: `modelprof comment` over the results, into a file of ours.
        assert script.count("subprocess.") == script.count(
            'subprocess.run(["modelprof", "comment", str(results), "--output", str(out)],')
    caller = workflow("cost-comment.yml")
    assert caller["on"] == {"workflow_run": {"workflows": ["cost gate"], "types": ["completed"]}}
    assert workflow("cost-gate.yml")["name"] == "cost gate"
    (call,) = caller["jobs"].values()
    assert call["uses"] == "$/.github/workflows/modelprof-comment.yml"
    assert call["permissions"] == job["permissions"]


HOSTILE = ("![x](http://evil.example/t.png) <img src=x> @org/team **APPROVED** "
           "[click](https://evil.example) `tick` a|b")


def test_the_artifact_is_data_never_the_comment(project: Path, tmp_path: Path) -> None:
    """A fork's gate writes the artifact: its report.md is never posted, and every text of its
    results reaches the comment escaped."""
    gate = _gate(project, 1_200_000)
    assert gate.returncode == 1, gate.stdout + gate.stderr
    report_dir = project / "modelprof-report"
    (report_dir / "report.md").write_text(f"# \u2705 {HOSTILE}\n\nAll good, merge it.\n")
    data = json.loads((report_dir / "results.json").read_text())
    for test in data["tests"]:
        test["nodeid"] = test["nodeid"] + HOSTILE
        for check in test["checks"]:
            check["reason"] = check["label"] = HOSTILE
    data["run"]["run_url"] = "javascript:alert(1)"
    (report_dir / "results.json").write_text(json.dumps(data))
    api = _api()
    with serve(api) as url:
        done = run_step(step("modelprof-comment.yml", "comment"), tmp_path,
                        _comment_env(url, report_dir, SHA_1, tmp_path))
    assert done.returncode == 0, done.stdout + done.stderr
    (comment,) = api.comments[7]
    body = comment["body"]
    assert "merge it" not in body and "javascript" not in body
    no_live_markdown(outside_code_spans(body))
    assert "\\*\\*APPROVED\\*\\*" in body and "**regressed**" in body


def test_results_that_do_not_validate_get_a_comment_that_says_so(tmp_path: Path) -> None:
    report = tmp_path / "report"
    report.mkdir()
    (report / "report.md").write_text("**APPROVED**\n")
    (report / "results.json").write_text(
        '{"kind": "pytest-modelprof-results", "tests": [], "\\n::error::x @org/team": 1}')
    api = _api()
    with serve(api) as url:
        done = run_step(step("modelprof-comment.yml", "comment"), tmp_path,
                        _comment_env(url, report, SHA_1, tmp_path))
    assert done.returncode == 0, done.stdout + done.stderr
    (comment,) = api.comments[7]
    assert comment["body"].startswith(
        MARKER + "\n**modelprof**: the cost gate's results file is not valid")
    assert "APPROVED" not in comment["body"] and "@org" not in comment["body"]
    # The reason is in the log, on one line that no workflow command can start.
    assert "results.json: not a valid RunResults" in done.stdout
    assert not any(line.startswith("::error::x") for line in done.stdout.splitlines())
