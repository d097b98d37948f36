"""One verdict for one change: the gate and ``modelprof compare`` agree, a model's
own change is not blamed on the environment, and every limit the user set is judged."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from modelprof_testing import Project, custom_op

# -- a limit the user set is never skipped --------------------------------------------------------

BREAKS = """
import pytest

@pytest.mark.profile(model="fake:tiny", max_subgraphs_delta=0)
def test_tiny():
    pass
"""


def _add_metric(project: Project, name: str, value: float) -> None:
    (path,) = (project.root / "baselines").rglob("*.json")
    data = json.loads(path.read_text())
    data["metrics"][name] = value
    path.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")


def test_an_unmeasured_limit_fails_with_and_without_a_baseline(project: Project) -> None:
    project.pytester.makepyfile(test_models=BREAKS)
    # The fake engine measures no fused subgraphs: the limit cannot be judged, without a baseline...
    first = project.run("--modelprof-update-baselines")
    first.assert_outcomes(failed=1)
    first.stdout.fnmatch_lines(["*subgraphs: a limit is set (max_subgraphs_delta=*)*"])
    # ...and with a baseline that holds the metric (say, from a run that did measure it).
    _add_metric(project, "subgraphs", 3)
    again = project.run()
    again.assert_outcomes(failed=1)
    again.stdout.fnmatch_lines(
        ["*subgraphs: a limit is set (max_subgraphs_delta=*) but this profile does not measure*"]
    )


# -- the gate and modelprof compare give one verdict; the model's change is the model's -----------

# NB: runpytest_subprocess, as in test_real_engine.py (inline runs and torch's lazy imports).
CHANGING = """
import pathlib

import pytest
import torch
import torch.nn as nn

CHANGED = pathlib.Path(__file__).with_name("changed.txt").read_text() == "1"

""" + custom_op("modelprof_test::mystery", "mystery") + """

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 8)

    def forward(self, x):
        x = self.fc(x)
        if CHANGED:
            if x.sum() > 0:  # data-dependent: meta tensors cannot decide, capture needs real data
                x = x * 2
            x = mystery(x)  # an op without a cost formula
        return x


@pytest.mark.profile(max_flops_delta=0.5)
def test_net(modelprof):
    modelprof(Net(), input_shape=(2, 8))
"""


def _verdicts(results: Path) -> dict[str, str]:
    (test,) = json.loads(results.read_text())["tests"]
    return {c["metric"]: c["verdict"] for c in test["checks"]}


@pytest.mark.slow
def test_compare_gives_the_gates_verdicts_and_blames_the_model(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    from pytest_modelprof.cli import main

    pytester.makepyfile(test_net=CHANGING)
    (pytester.path / "changed.txt").write_text("0")
    old, new = pytester.path / "old.json", pytester.path / "new.json"
    update = "--modelprof-update-baselines"
    pytester.runpytest_subprocess(update, f"--modelprof-json={old}").assert_outcomes(passed=1)
    (pytester.path / "changed.txt").write_text("1")
    gate = pytester.runpytest_subprocess(f"--modelprof-json={new}")
    gate.assert_outcomes(failed=1)
    gated = _verdicts(new)
    assert gated["uncounted_ops"] == "regressed" and gated["capture_mode"] == "regressed"
    # Meta -> real capture is the model's change: named as such, never "another environment",
    # so no count is let off as a kernel difference.
    text = gate.stdout.str()
    assert "capture mode: meta \u2192 real: the model newly needs real data" in text
    assert "another environment" not in text and "warning" not in gated.values()
    assert gated["traffic"] == "regressed"  # meta -> real moved memory: not let off as a kernel

    # The same pair under the marker's limit: the same rows, the same verdicts, exit code 1.
    capsys.readouterr()
    diff = pytester.path / "diff.json"
    limit = ["--limit", "max_flops_delta=50%"]
    code = main(["compare", str(old), str(new), *limit, "--output", str(diff)])
    out = capsys.readouterr().out
    assert code == 1, out
    assert _verdicts(diff) == gated
    assert "another environment" not in out
