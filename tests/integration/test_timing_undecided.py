"""An undecided latency verdict: the run measures up to 8 x ``timing_rounds``
(the baseline keeps 4 x), and the warning carries its confidence wherever it is shown."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_modelprof.cli import main
from pytest_modelprof.runtime import NormalisedTiming

TIMED = """
import pytest
import torch.nn as nn


@pytest.mark.profile(max_latency_delta=0.1, timing_rounds=20)
def test_timed(modelprof):
    modelprof(nn.Linear(256, 256), input_shape=(64, 256))
"""

GITHUB = {
    "GITHUB_ACTIONS": "true",
    "GITHUB_WORKSPACE": "",  # set to the project below
    "GITHUB_SERVER_URL": "https://github.com",
    "GITHUB_REPOSITORY": "o/r",
    "GITHUB_RUN_ID": "7",
}


def _make_undecided(path: Path) -> None:
    """Rewrite the baseline's model rounds so that no number of current rounds can decide.

    One round in ten is 1.5x faster than the model measured, the rest 2x slower, calibration
    rounds as measured: the baseline's statistic (mean of its fastest 10 %) is the fast level,
    so the point estimate is a slowdown of about +50 %; but a resample with fewer fast rounds
    mixes slow ones in, and about 30 % of resamples (6 or fewer fast rounds of 80) read a
    slowdown within +10 %. So the verdict is inconclusive at every look, for a current level
    anywhere between 0.75x and 1.3x of the one measured.
    """
    data = json.loads(path.read_text())
    timing = NormalisedTiming.model_validate(data["timing"])
    level, n = timing.fast_ms, timing.rounds
    model = [level / 1.5 if i % 10 == 0 else level * 2.0 for i in range(n)]
    data["timing"] = NormalisedTiming.from_parts(
        model, timing.parts_ms, timer=timing.model.timer, warmup=timing.model.warmup
    ).model_dump(mode="json")
    path.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")


@pytest.mark.slow
def test_an_undecided_latency_runs_to_the_cap_and_says_how_sure_everywhere(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    pytester.makepyfile(test_timed=TIMED)
    pytester.runpytest_subprocess("--modelprof-update-baselines").assert_outcomes(passed=1)
    (baseline,) = (pytester.path / "baselines").rglob("*.json")
    # Recording a baseline measures 4 x timing_rounds, not the run cap.
    assert json.loads(baseline.read_text())["timing"]["rounds"] == 80
    _make_undecided(baseline)
    for key, value in GITHUB.items():
        monkeypatch.setenv(key, value or str(pytester.path))
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(pytester.path / "summary.md"))
    outputs = ["--modelprof-json=r.json", "--modelprof-report=r.html", "--modelprof-markdown=r.md"]

    run = pytester.runpytest_subprocess(*outputs)
    run.assert_outcomes(passed=1)  # undecided: a warning, never a failure
    # Undecided at every look: the run measured 8 x timing_rounds against the baseline's 80.
    said = " ".join(run.stdout.str().split())  # the summary wraps its lines to the width
    assert "warn latency: not judged: inconclusive: " in said and "160 vs 80 rounds" in said
    assert not [line for line in run.stdout.lines if line.startswith("::error")]
    (test,) = json.loads((pytester.path / "r.json").read_text())["tests"]
    (row,) = [c for c in test["checks"] if c["kind"] == "latency"]
    assert row["verdict"] == "warning" and row["reason"].startswith("not judged: inconclusive")
    confidence = row["detail"]["confidence"]
    sure = f"confidence {confidence * 100:.0f} %"
    assert 0.0 < confidence < 0.95 and sure in row["reason"]
    assert row["delta_text"].endswith(f"(normalised, {sure})")
    assert any(sure in w for w in test["warnings"])
    assert f"slower calibration-normalised (limit +10 %), {sure}" in said
    for name in ("r.md", "summary.md", "r.html"):
        text = (pytester.path / name).read_text()
        assert f"% slower calibration-normalised (limit +10 %), {sure}" in text, name
        # The metric tables' delta column too (the step summary has none): a table alone
        # still says how sure.
        assert name == "summary.md" or f"(normalised, {sure})" in text, name

    # modelprof compare judges the same stored rounds the same way: the baseline against a copy
    # holding the run's rounds.
    current = pytester.path / "current.json"
    current.write_text(json.dumps(json.loads(baseline.read_text()) | {"timing": test["timing"]}))
    capsys.readouterr()
    md, html = pytester.path / "c.md", pytester.path / "c.html"
    code = main(
        [
            "compare",
            str(baseline),
            str(current),
            "--limit",
            "max_latency_delta=0.1",
            "--markdown",
            str(md),
            "--html",
            str(html),
        ]
    )
    captured = capsys.readouterr()
    out = " ".join((captured.out + captured.err).split())
    assert code == 0, out
    assert "not judged: inconclusive" in out and sure in out and "160 vs 80 rounds" in out
    for text in (md.read_text(), html.read_text()):
        assert f"(normalised, {sure})" in text and "not judged: inconclusive" in text
