"""Results files written by older versions load under today's rows and quantity names, a file
that is not a modelprof document says what was expected, and the run's facts name the CI run."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from pytest_modelprof.baseline.metrics import active_metrics
from pytest_modelprof.errors import ReportError
from pytest_modelprof.results.document import (
    RESULTS_KIND,
    RESULTS_SCHEMA_VERSION,
    RunResults,
    collect_run_info,
    load_document,
    main,
    results_json_schema,
)


def _test(**fields: object) -> dict[str, object]:
    return {"nodeid": "t.py::test_a", "model": "ResNet", "status": "regressed", **fields}


def _results(version: int, *tests: dict[str, object]) -> str:
    return json.dumps(
        {"kind": RESULTS_KIND, "schema_version": version, "run": {}, "tests": list(tests)}
    )


def test_a_v1_file_gets_formatted_rows_under_todays_metric_names() -> None:
    v1 = _results(
        1,
        _test(
            checks=[
                {
                    "metric": "flops",
                    "baseline": 1e9,
                    "current": 1.2e9,
                    "limit": "+5.0 %",
                    "verdict": "regressed",
                },
                {
                    "metric": "memory",
                    "baseline": 2e6,
                    "current": 3e6,
                    "limit": "max_memory=2.5MB",
                    "over_budget": True,
                    "verdict": "regressed",
                },
                {"metric": "a_plugin_metric", "current": 3, "verdict": "ok"},
            ]
        ),
    )
    results = RunResults.from_json(v1, source="old.json")
    assert results.schema_version == RESULTS_SCHEMA_VERSION
    flops_row, traffic_row, plugin_row = results.tests[0].checks
    flops = active_metrics().by_name("flops")
    traffic = active_metrics().by_name("traffic")
    assert flops is not None and traffic is not None
    assert (flops_row.label, flops_row.kind, flops_row.verdict) == (
        flops.label,
        "delta",
        "regressed",
    )
    assert flops_row.reason == f"{flops.format(1e9)} \u2192 {flops.format(1.2e9)}, limit +5.0 %"
    assert flops_row.current_text == flops.format(1.2e9)
    # The row of the metric v5 renamed (memory -> traffic) has the new name, label and format.
    assert (traffic_row.metric, traffic_row.label, traffic_row.kind) == (
        "traffic",
        traffic.label,
        "budget",
    )
    assert traffic_row.baseline_text == traffic.format(2e6)
    # A metric this version does not know keeps its name and plain numbers.
    assert (plugin_row.label, plugin_row.current_text, plugin_row.baseline_text) == (
        "a_plugin_metric",
        "3",
        "\u2013",
    )
    assert plugin_row.summary is False


def test_a_v4_file_renames_metrics_growth_rows_layer_changes_and_sweeps() -> None:
    v4 = _results(
        4,
        _test(
            metrics={"memory": 5.0, "flops": 1.0},
            baseline_metrics={"latency_ms": 2.0},
            checks=[
                {
                    "metric": "memory_growth[batch]",
                    "label": "memory growth",
                    "kind": "growth",
                    "verdict": "ok",
                    "reason": "x",
                },
                {
                    "metric": "flops",
                    "label": "FLOPs",
                    "kind": "delta",
                    "verdict": "ok",
                    "reason": "x",
                    "detail": {
                        "layer_changes": [
                            {
                                "layer": "fc",
                                "before": {"memory": 4, "flops": 1},
                                "after": {"memory": 6, "flops": 1},
                            },
                        ]
                    },
                },
                {
                    "metric": "latency_ms",
                    "label": "latency",
                    "kind": "delta",
                    "verdict": "ok",
                    "reason": "x",
                },
            ],
            sweep={
                "series": [
                    {
                        "points": [{"batch": 1, "memory": 10}],
                        "fits": [{"metric": "flops", "memory": 1}],
                    }
                ]
            },
        ),
    )
    test = RunResults.from_json(v4).tests[0]
    assert test.metrics == {"traffic": 5.0, "flops": 1.0}
    assert test.baseline_metrics == {"latency": 2.0}
    growth, flops, latency = test.checks
    assert growth.metric == "traffic_growth[batch]"
    assert flops.detail["layer_changes"][0]["before"] == {"traffic": 4, "flops": 1}
    assert flops.detail["layer_changes"][0]["after"] == {"traffic": 6, "flops": 1}
    latency_metric = active_metrics().by_name("latency")
    assert latency_metric is not None
    assert (latency.metric, latency.label) == ("latency", latency_metric.label)
    assert test.sweep is not None
    (series,) = test.sweep["series"]
    assert series["points"] == [{"batch": 1, "traffic": 10}]
    assert series["fits"] == [{"metric": "flops", "traffic": 1}]


def test_a_newer_file_asks_for_an_upgrade() -> None:
    with pytest.raises(
        ReportError, match=r"new\.json: results schema_version 99 is newer .*upgrade"
    ):
        RunResults.from_json(_results(99), source="new.json")


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("[1, 2]", "expected a JSON object, got list"),
        ('{"hello": 1}', "not a modelprof document; expected a results file"),
        ("{", "not valid JSON"),
    ],
)
def test_a_file_that_is_no_document_names_itself_and_the_problem(
    tmp_path: Path, text: str, problem: str
) -> None:
    path = tmp_path / "x.json"
    path.write_text(text)
    with pytest.raises(ReportError, match=problem) as caught:
        load_document(path)
    assert str(caught.value).startswith(f"{path}: ")


def test_a_missing_file_is_named(tmp_path: Path) -> None:
    with pytest.raises(ReportError, match=r"absent\.json: cannot read \(No such file"):
        load_document(tmp_path / "absent.json")


def test_the_schema_command_writes_the_file_or_prints_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "schemas" / "results.schema.json"
    assert main([str(target)]) == 0
    assert target.read_text(encoding="utf-8") == results_json_schema()
    assert main([]) == 0
    assert capsys.readouterr().out == results_json_schema()


def test_run_info_links_the_ci_run_and_its_artifacts(tmp_path: Path) -> None:
    env = {
        "GITHUB_SHA": "abc123",
        "GITHUB_HEAD_REF": "feature",
        "GITHUB_SERVER_URL": "https://github.com",
        "GITHUB_REPOSITORY": "org/repo",
        "GITHUB_RUN_ID": "42",
    }
    info = collect_run_info(rootdir=tmp_path, env=env, started=None, finished=None, profiles=[])
    assert (info.commit, info.ref) == ("abc123", "feature")
    assert info.repository_url == "https://github.com/org/repo"
    assert info.run_url == "https://github.com/org/repo/actions/runs/42"
    assert info.artifact_url == "https://github.com/org/repo/actions/runs/42#artifacts"
    given = collect_run_info(
        rootdir=tmp_path,
        env={**env, "MODELPROF_ARTIFACT_URL": "https://x/a.zip"},
        started=None,
        finished=None,
        profiles=[],
    )
    assert given.artifact_url == "https://x/a.zip"


def test_run_info_outside_ci_reads_git_and_leaves_a_detached_head_unnamed(tmp_path: Path) -> None:
    def git(*args: str) -> str:
        done = subprocess.run(
            ["git", "-c", "user.name=t", "-c", "user.email=t@t", *args],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            check=True,
        )
        return done.stdout.strip()

    assert (
        collect_run_info(rootdir=tmp_path, env={}, started=None, finished=None, profiles=[]).commit
        is None
    )  # not a repository: no commit, no error
    git("init", "-q", "-b", "main")
    git("commit", "-q", "--allow-empty", "-m", "one")
    head = git("rev-parse", "HEAD")
    info = collect_run_info(rootdir=tmp_path, env={}, started=None, finished=None, profiles=[])
    assert (info.commit, info.ref, info.run_url) == (head, "main", None)
    git("checkout", "-q", "--detach")
    detached = collect_run_info(rootdir=tmp_path, env={}, started=None, finished=None, profiles=[])
    assert (detached.commit, detached.ref) == (head, None)
