"""Verdicts a team can trust: each "what was seen" item as a pytest run.

Fake-engine runs are in-process; real-engine runs go through a subprocess (see the NB in
test_real_engine.py).
"""

from __future__ import annotations

import fnmatch
import json
import os
import stat
from pathlib import Path

import pytest
from modelprof_testing import BROKEN_MODEL, TIMED_MODEL, Project, custom_op

# -- a cheaper model never fails by default -----------------------------------------------------

CONV = """
import pathlib

import pytest
import torch.nn as nn

HERE = pathlib.Path(__file__).parent
WIDTH = int((HERE / "width.txt").read_text())
SIZE = int((HERE / "size.txt").read_text())


@pytest.mark.profile(max_flops_delta=0.02)
def test_conv(modelprof):
    net = nn.Sequential(nn.Conv2d(3, WIDTH, 3, padding=1), nn.ReLU(), nn.Conv2d(WIDTH, 8, 1))
    modelprof(net, input_shape=(1, 3, SIZE, SIZE))
"""


@pytest.mark.slow
def test_a_cheaper_model_passes_and_a_bigger_input_is_called_out(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(test_conv=CONV)
    (pytester.path / "width.txt").write_text("16")
    (pytester.path / "size.txt").write_text("16")
    pytester.runpytest_subprocess("--modelprof-update-baselines").assert_outcomes(passed=1)
    # Narrower conv: FLOPs fall about 25 %; arithmetic intensity falls too, since it is a ratio.
    (pytester.path / "width.txt").write_text("12")
    narrow = pytester.runpytest_subprocess()
    narrow.assert_outcomes(passed=1)
    narrow.stdout.fnmatch_lines(["improved  test_conv.py::test_conv*"])
    # Smaller input: every count falls; still no failure.
    (pytester.path / "width.txt").write_text("16")
    (pytester.path / "size.txt").write_text("12")
    pytester.runpytest_subprocess().assert_outcomes(passed=1)
    # A bigger input fails on FLOPs, and the message says the inputs changed.
    (pytester.path / "size.txt").write_text("20")
    bigger = pytester.runpytest_subprocess()
    bigger.assert_outcomes(failed=1)
    bigger.stdout.fnmatch_lines(  # the cause first, then the rows it explains
        ["*inputs changed: 1\u00d73\u00d716\u00d716 float32 \u2192 1\u00d73\u00d720\u00d720 "
         "float32*", "*FLOPs: * \u2192 * (+*%, limit +2.0 %)*"]
    )


# -- a torch upgrade does not fail without saying why --------------------------------------------

MARKED = """
import pytest

@pytest.mark.profile(model="fake:tiny", input_shape=(1, 3, 8, 8))
def test_tiny():
    pass
"""


def _rewrite_environment(project: Project, **fields: str) -> None:
    (path,) = (project.root / "baselines").rglob("*.json")
    data = json.loads(path.read_text())
    data["environment"].update(fields)
    path.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")


def test_kernel_dependent_counts_warn_across_torch_versions(project: Project) -> None:
    project.pytester.makepyfile(test_models=MARKED)
    project.run("--modelprof-update-baselines").assert_outcomes(passed=1)
    _rewrite_environment(project, torch_version="2.99.0")
    # The same model code on another torch: traffic moves by -2.6 % (another kernel).
    project.set_costs(tiny={"flops": 1_000_000, "memory": 97_400})
    strict = project.run("--modelprof-fail-on-improvement")
    strict.assert_outcomes(passed=1)
    strict.stdout.fnmatch_lines([
        "*warn traffic: 100 KB \u2192 97.4 KB (-2.6 %"
        "*environment changed (torch 2.99.0 \u2192 0.0-fake)*",
        "*note: 1 baseline recorded in another environment (torch 2.99.0 \u2192 0.0-fake): "
        "kernel-dependent counts warn until you re-record*",
    ])
    # Growth of a kernel-dependent count warns too, and names the difference...
    project.set_costs(tiny={"flops": 1_000_000, "memory": 103_000})
    grew = project.run()
    grew.assert_outcomes(passed=1)
    grew.stdout.fnmatch_lines(["*warn traffic: *(+3.0 %*torch 2.99.0 \u2192 0.0-fake*"])
    # ...but FLOPs do not depend on kernels: they still fail, with the environment named.
    project.set_costs(tiny={"flops": 1_100_000})
    flops = project.run()
    flops.assert_outcomes(failed=1)
    flops.stdout.fnmatch_lines([
        # What changed outside the model heads the failure (the cause first).
        "*the baseline was recorded in another environment: torch 2.99.0 \u2192 0.0-fake*",
        "*FLOPs: 1 MFLOPs \u2192 1.1 MFLOPs (+10.0 %, limit exact)*",
    ])
    # --modelprof-fail-on-environment judges kernel-dependent counts strictly again.
    project.set_costs(tiny={"flops": 1_000_000, "memory": 103_000})
    project.run("--modelprof-fail-on-environment").assert_outcomes(failed=1)


MLP = """
import pathlib

import pytest
import torch.nn as nn

WIDTH = int(pathlib.Path(__file__).with_name("width.txt").read_text())


@pytest.mark.profile(max_flops_delta=0.05)
def test_mlp(modelprof):
    mlp = nn.Sequential(nn.Linear(8, WIDTH), nn.ReLU(), nn.Linear(WIDTH, 4))
    modelprof(mlp, input_shape=(2, 8))
"""


@pytest.mark.slow
def test_a_pass_on_another_torch_says_so_in_the_terminal_and_the_markdown(
    pytester: pytest.Pytester,
) -> None:
    # A baseline from torch 2.99.0, rerun here with unchanged counts, passes;
    # the terminal and the Markdown report (the PR comment) say once that the gate is weaker.
    import torch

    pytester.makepyfile(test_mlp=MLP)
    (pytester.path / "width.txt").write_text("16")
    pytester.runpytest_subprocess("--modelprof-update-baselines").assert_outcomes(passed=1)
    (path,) = (pytester.path / "baselines").rglob("*.json")
    data = json.loads(path.read_text())
    data["environment"]["torch_version"] = "2.99.0"
    path.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")
    line = (
        "*1 baseline recorded in another environment "
        f"(torch 2.99.0 \u2192 {torch.__version__.split('+')[0]}):"
        " kernel-dependent counts warn until you re-record*"
    )
    for width, outcome in (("16", {"passed": 1}), ("32", {"failed": 1})):
        (pytester.path / "width.txt").write_text(width)
        result = pytester.runpytest_subprocess("--modelprof-markdown=report.md")
        result.assert_outcomes(**outcome)
        lines = result.stdout.lines
        summary = lines[lines.index(next(x for x in lines if "= modelprof =" in x)) :]
        assert len(fnmatch.filter(summary, line)) == 1, summary
        markdown = (pytester.path / "report.md").read_text().splitlines()
        assert len(fnmatch.filter(markdown, line)) == 1, markdown


# -- every failure explained everywhere ---------------------------------------------------------

TIMED = f"""
import pytest
{TIMED_MODEL}

@pytest.mark.profile(max_latency_delta=0.1, timing_rounds=20)
def test_timed(modelprof):
    modelprof(Net(), input_shape=(8, 64))
"""


def _github_env(tmp: Path) -> dict[str, str]:
    return {
        "GITHUB_ACTIONS": "true",
        "GITHUB_STEP_SUMMARY": str(tmp / "summary.md"),
        "GITHUB_WORKSPACE": str(tmp),
        "GITHUB_SERVER_URL": "https://github.com",
        "GITHUB_REPOSITORY": "o/r",
        "GITHUB_RUN_ID": "7",
    }


@pytest.mark.slow
def test_a_latency_failure_is_explained_in_every_report(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    # timing_verdicts='warn' in the marker keeps a latency limit warn-only.
    pytester.makepyfile(test_timed=TIMED.replace("rounds=20", "rounds=20, timing_verdicts='warn'"))
    extra = pytester.path / "extra_ms.txt"
    extra.write_text("0")
    pytester.runpytest_subprocess("--modelprof-update-baselines").assert_outcomes(passed=1)
    extra.write_text("3")  # many times slower than a 64x64 linear layer
    for key, value in _github_env(pytester.path).items():
        monkeypatch.setenv(key, value)
    outputs = ["--modelprof-json=r.json", "--modelprof-report=r.html", "--modelprof-markdown=r.md"]

    warned = pytester.runpytest_subprocess(*outputs)
    warned.assert_outcomes(passed=1)
    warned.stdout.fnmatch_lines(["*warn latency: regressed: * \u2192 * ms (fastest 10 %), *slow*"])
    html = (pytester.path / "r.html").read_text()
    assert 'data-status="warning"' in html and "slower calibration-normalised" in html
    assert "within limits" not in html

    (pytester.path / "summary.md").unlink()
    pytester.makepyfile(test_timed=TIMED)  # a decisive slowdown beyond the limit fails
    failed = pytester.runpytest_subprocess(*outputs)
    failed.assert_outcomes(failed=1)
    failed.stdout.fnmatch_lines(["*latency: regressed: * \u2192 * ms (fastest 10 %), *confidence*"])
    reason_part = "% slower calibration-normalised"  # the figures of the latency reason
    data = json.loads((pytester.path / "r.json").read_text())
    (test,) = data["tests"]
    assert any(reason_part in f and "confidence" in f for f in test["failures"])
    (row,) = [c for c in test["checks"] if c["kind"] == "latency"]
    assert row["verdict"] == "regressed" and "confidence" in row["reason"]
    for name in ("r.html", "r.md", "summary.md"):
        text = (pytester.path / name).read_text()
        assert reason_part in text, name
    annotation = [line for line in failed.stdout.lines if line.startswith("::error ")]
    # "%" is escaped in a workflow command, so look for the words.
    assert len(annotation) == 1 and "slower calibration-normalised" in annotation[0]


QUADRATIC = """
import pathlib

import pytest
import torch
import torch.nn as nn

QUADRATIC = pathlib.Path(__file__).with_name("quadratic.txt").read_text() == "1"


class Mixer(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(16, 16)

    def forward(self, x):
        x = self.proj(x)
        if QUADRATIC:  # every token looks at every token
            x = torch.softmax(x @ x.transpose(-1, -2), dim=-1) @ x
        return x


@pytest.mark.profile(sweep={"seq_len": [16, 32, 64]}, max_flops_growth=1.1)
def test_mixer(modelprof):
    modelprof(Mixer(), input_shape=(1, 16, 16))
"""


@pytest.mark.slow
def test_a_growth_failure_is_explained_in_the_reports(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_mixer=QUADRATIC)
    (pytester.path / "quadratic.txt").write_text("0")
    pytester.runpytest_subprocess("--modelprof-update-baselines").assert_outcomes(passed=1)
    (pytester.path / "quadratic.txt").write_text("1")
    result = pytester.runpytest_subprocess("--modelprof-json=r.json", "--modelprof-markdown=r.md")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*FLOPs growth (seq_len): grows as seq_len^1.* above "
                                 "max_flops_growth=1.1*"])
    data = json.loads((pytester.path / "r.json").read_text())
    (row,) = [c for c in data["tests"][0]["checks"] if c["kind"] == "growth"]
    assert row["verdict"] == "regressed" and row["detail"]["axis"] == "seq_len"
    # Reasons are plain text in Markdown: the "_" is escaped (it renders as "seq_len").
    assert "grows as seq\\_len^" in (pytester.path / "r.md").read_text()


# -- no churn -------------------------------------------------------------------------------------


@pytest.mark.slow
def test_rewriting_a_timed_baseline_leaves_it_byte_identical(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_timed=TIMED.replace("max_latency_delta=0.1", "max_latency_delta=0.5"))
    (pytester.path / "extra_ms.txt").write_text("0")
    pytester.runpytest_subprocess("--modelprof-update-baselines").assert_outcomes(passed=1)
    (path,) = (pytester.path / "baselines").rglob("*.json")
    first = path.read_bytes()
    again = pytester.runpytest_subprocess("--modelprof-update-baselines")
    again.assert_outcomes(passed=1)
    again.stdout.fnmatch_lines(["ok  *test_timed.py::test_timed*"])  # "ok": nothing rewritten
    assert path.read_bytes() == first


# -- nothing counted can hide ---------------------------------------------------------------------

UNCOUNTED = """
import pathlib

import pytest
import torch
import torch.nn as nn

NEW_OP = pathlib.Path(__file__).with_name("new_op.txt").read_text() == "1"

""" + custom_op("modelprof_test::mystery", "mystery") + """

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 8)

    def forward(self, x):
        x = self.fc(x)
        return mystery(x) if NEW_OP else x


@pytest.mark.profile(max_flops_delta=0.5)
def test_net(modelprof):
    modelprof(Net(), input_shape=(2, 8))
"""


@pytest.mark.slow
def test_a_new_uncounted_op_fails_by_name(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_net=UNCOUNTED)
    (pytester.path / "new_op.txt").write_text("0")
    pytester.runpytest_subprocess("--modelprof-update-baselines").assert_outcomes(passed=1)
    (pytester.path / "new_op.txt").write_text("1")
    result = pytester.runpytest_subprocess()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*uncounted ops: newly uncounted: modelprof_test*mystery*"])
    # fail_on_uncounted (a flag, an ini key, a marker keyword): any uncounted op fails, even in
    # the baseline.
    pytester.runpytest_subprocess("--modelprof-update-baselines").assert_outcomes(passed=1)
    pytester.runpytest_subprocess().assert_outcomes(passed=1)
    strict = pytester.runpytest_subprocess("--modelprof-fail-on-uncounted")
    strict.assert_outcomes(failed=1)
    strict.stdout.fnmatch_lines(
        ["*uncounted ops: *mystery* have no cost formula (fail_on_uncounted)*"]
    )


# -- the session cache sees dtype; the marker gates a dtype -------------------------------------

CACHE = """
import pytest
import torch.nn as nn


@pytest.mark.profile(max_flops_delta=0.1)
def test_half(modelprof):
    net = nn.Linear(64, 64)
    full = modelprof(net, input_shape=(2, 64), name="fp32")
    net.half()
    half = modelprof(net, input_shape=(2, 64), name="fp16")
    assert half.param_bytes * 2 == full.param_bytes


@pytest.mark.profile(model="resnet18", input_shape=(1, 3, 32, 32), dtype="bfloat16")
def test_named_in_bf16():
    pass
"""


@pytest.mark.slow
def test_the_cache_sees_dtype_and_the_marker_takes_one(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_cache=CACHE)
    pytester.runpytest_subprocess("--modelprof-update-baselines").assert_outcomes(passed=2)
    (named,) = (pytester.path / "baselines").rglob("test_named_in_bf16.json")
    assert json.loads(named.read_text())["environment"]["dtype"] == "bfloat16"


# -- errors that help, files that are the user's --------------------------------------------------


def test_a_misspelled_limit_gets_a_suggestion(project: Project) -> None:
    project.pytester.makepyfile(
        test_models=MARKED.replace('input_shape=(1, 3, 8, 8)', 'input_shape=(1, 3, 8, 8), '
                                   'max_flop_delta=0.1')
    )
    result = project.run()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        ["*unknown argument max_flop_delta*did you mean 'max_flops_delta'*"]
    )
    failures = result.stdout.str().split("short test summary")[0]
    assert failures.count("unknown argument max_flop_delta") == 1  # one error, printed once
    assert "Traceback" not in result.stdout.str()


def test_disable_runs_the_tests_without_the_gate(project: Project) -> None:
    project.pytester.makepyfile(test_models=MARKED)
    result = project.run("--modelprof-disable", "--strict-markers")
    result.assert_outcomes(passed=1)  # no baseline, and still no failure
    result.stdout.fnmatch_lines(["modelprof: disabled*"])
    assert project.baselines() == {} and project.calls() == []
    project.pytester.makeini("[pytest]\nmodelprof_disable = true\n")
    project.run("--strict-markers").assert_outcomes(passed=1)


def test_files_get_the_users_umask(project: Project) -> None:
    project.pytester.makepyfile(test_models=MARKED)
    old = os.umask(0o022)
    try:
        project.run("--modelprof-update-baselines", "--modelprof-report=r.html")
    finally:
        os.umask(old)
    (path,) = (project.root / "baselines").rglob("*.json")
    assert stat.S_IMODE(path.stat().st_mode) == 0o644
    assert stat.S_IMODE((project.root / "r.html").stat().st_mode) == 0o644


def test_an_unwritable_baseline_folder_is_one_clear_error(project: Project) -> None:
    project.pytester.makepyfile(test_models=MARKED)
    (project.root / "blocked").write_text("a file where a folder should be")
    result = project.run("--modelprof-update-baselines", "--modelprof-baseline-dir=blocked/b")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*cannot write baseline *blocked*Check that * is writable*"])
    assert "Traceback" not in result.stdout.str()


def test_the_job_summary_links_no_report_that_was_not_written(
    project: Project, monkeypatch: pytest.MonkeyPatch
) -> None:
    project.pytester.makepyfile(test_models=MARKED)
    for key, value in _github_env(project.root).items():
        monkeypatch.setenv(key, value)
    project.run()
    summary = (project.root / "summary.md").read_text()
    assert "no baseline" in summary and "HTML report" not in summary


BROKEN = f"""
import pytest
{BROKEN_MODEL}

@pytest.mark.profile(max_flops_delta=0.1)
def test_broken(modelprof):
    modelprof(Broken(), input_shape=(2, 8))
"""


@pytest.mark.slow
def test_a_models_own_error_is_the_models_in_a_short_failure(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_broken=BROKEN)
    result = pytester.runpytest_subprocess()
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    result.stdout.fnmatch_lines(["*ValueError: the model's own bug*test_broken.py:* in forward*"])
    assert "rejected input" not in out and "input_shape=" not in out.split("FAILURES")[-1]
    failure = out.split("FAILURES")[-1].split("short test summary")[0]
    # Short: no frames inside torch or this plugin, and not hundreds of lines.
    assert "site-packages/torch" not in failure and "pytest_modelprof/" not in failure
    assert len(failure.splitlines()) < 40
