"""A baseline that lacks a figure, or holds a figure of the wrong type, never lets a regression
pass: it is refused with one line naming the file, or the row fails."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

# Net(w): FLOPs, params and memory all grow about linearly in w, so Net(64) is about four
# times Net(16).
PROJECT = """
import pathlib

import pytest
import torch.nn as nn

WIDTH = int(pathlib.Path(__file__).with_name("width.txt").read_text())


class Net(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(32, width), nn.ReLU(), nn.Linear(width, 32))

    def forward(self, x):
        return self.body(x)


@pytest.mark.profile(max_flops_delta=0.0)
def test_net(modelprof):
    modelprof(Net(WIDTH), input_shape=(4, 32))
"""

BASELINE = Path("baselines", "test_models", "test_net.json")


def _recorded(pytester: pytest.Pytester) -> dict[str, object]:
    """The project with a baseline recorded for Net(16), then the model made Net(64)."""
    pytester.makepyfile(test_models=PROJECT)
    (pytester.path / "width.txt").write_text("16")
    pytester.runpytest("--modelprof-update-baselines").assert_outcomes(passed=1)
    (pytester.path / "width.txt").write_text("64")
    data: dict[str, object] = json.loads((pytester.path / BASELINE).read_text())
    return data


def _write(pytester: pytest.Pytester, data: dict[str, object]) -> None:
    (pytester.path / BASELINE).write_text(json.dumps(data, indent=2))


def test_empty_metrics_are_refused(pytester: pytest.Pytester) -> None:
    data = _recorded(pytester)
    data["metrics"] = {}  # a bad merge-conflict resolution
    _write(pytester, data)
    result = pytester.runpytest("--modelprof-json=results.json")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*baselines/test_models/test_net.json: incomplete baseline (metrics lack "
            "flops, intensity, macs, params, peak_activations, traffic*"
            "`pytest --modelprof-update-baselines`*",
        ]
    )
    results = json.loads((pytester.path / "results.json").read_text())
    assert [t["status"] for t in results["tests"]] == ["error"]
    # Updating writes the whole baseline again; the next run then judges Net(64) against it.
    pytester.runpytest("--modelprof-update-baselines").assert_outcomes(passed=1)
    assert json.loads((pytester.path / BASELINE).read_text())["metrics"]["flops"] > 0
    pytester.runpytest().assert_outcomes(passed=1)


def test_one_figure_left_is_refused(pytester: pytest.Pytester) -> None:
    data = _recorded(pytester)
    data["metrics"] = {"flops": 264000}
    _write(pytester, data)
    result = pytester.runpytest()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*test_net.json: incomplete baseline (metrics lack intensity, macs, params, "
            "peak_activations, traffic*"
        ]
    )
    result.stdout.no_fnmatch_line("*improved*")


def test_mistyped_non_finite_and_deep_figures_give_one_line(pytester: pytest.Pytester) -> None:
    # Every variant has a unit test (test_strict_baselines.py); these are the gate's end to end.
    data = _recorded(pytester)
    metrics = data["metrics"]
    assert isinstance(metrics, dict)
    raw = json.dumps(data, indent=2)
    was = f'"flops": {metrics["flops"]}'
    cases = [
        (json.dumps({**data, "metrics": {**metrics, "flops": 1e308}}), "metrics.flops: *integer*"),
        (json.dumps({**data, "metrics": {**metrics, "flops": True}}), "metrics.flops: *integer*"),
        (raw.replace(was, f'"flops": "{metrics["flops"]}"'), "metrics.flops: *integer*"),
        (raw.replace(was, '"flops": NaN'), "metrics.flops: NaN is not a finite number"),
        (
            raw.replace(was, '"flops": ' + "[" * 100_000 + "]" * 100_000),
            "metrics.flops[[]0[]]*: nested deeper than 64 levels",
        ),
    ]
    for text, why in cases:
        (pytester.path / BASELINE).write_text(text)
        result = pytester.runpytest()
        result.assert_outcomes(failed=1)
        result.stdout.fnmatch_lines([f"*test_net.json: corrupt baseline ({why}*"])
        result.stdout.no_fnmatch_line("*Traceback*")
        result.stdout.no_fnmatch_line("*RecursionError*")


def test_a_figure_the_baseline_never_recorded_is_new_in_every_report(
    pytester: pytest.Pytester,
) -> None:
    # subgraphs comes from the engine's partition: a baseline may lack it (a profile hook of
    # its own, an older release), so the file is read, and the row says the figure is new.
    data = _recorded(pytester)
    (pytester.path / "width.txt").write_text("16")
    del data["metrics"]["subgraphs"]  # type: ignore[attr-defined]
    _write(pytester, data)
    result = pytester.runpytest(
        "--modelprof-json=r.json", "--modelprof-markdown=r.md", "--modelprof-report=r.html"
    )
    result.assert_outcomes(passed=1)
    said = "subgraphs: 2, not in the baseline"
    result.stdout.fnmatch_lines(["test_models.py::test_net:", f"  new  {said}*"])
    row = next(
        c
        for c in json.loads((pytester.path / "r.json").read_text())["tests"][0]["checks"]
        if c["metric"] == "subgraphs"
    )
    assert row["verdict"] == "new" and "not in the baseline" in row["reason"], row
    for report in ("r.md", "r.html"):
        text = (pytester.path / report).read_text()
        assert "Not in the baseline (new)" in text and said in text, report


def test_a_limit_written_for_a_figure_the_baseline_lacks_fails(
    pytester: pytest.Pytester,
) -> None:
    data = _recorded(pytester)
    (pytester.path / "width.txt").write_text("16")
    del data["metrics"]["subgraphs"]  # type: ignore[attr-defined]
    _write(pytester, data)
    result = pytester.runpytest("--modelprof-limit=max_subgraphs_delta=0")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*subgraphs: a limit is set (max_subgraphs_delta=*) but the baseline holds no "
            "subgraphs figure to judge it against*"
        ]
    )
