"""``modelprof bench``: the JSON document on stdout, the report with the slowest modules, errors.

No test asserts speed: only keys, orderings and what goes to which stream.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_modelprof.cli import main

Capsys = pytest.CaptureFixture[str]

PHASES = ("forward", "backward", "training_step")


def test_json_has_every_key_and_stdout_only_the_document(capsys: Capsys) -> None:
    # The command, with fewer warm-up rounds and one thread to keep the test short.
    code = main(["bench", "resnet18", "--input-shape", "1,3,64,64", "--rounds", "5", "--json",
                 "--warmup", "1", "--threads", "1"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    doc = json.loads(captured.out)  # nothing but the document on stdout
    for phase in PHASES:
        stats = doc["runtime"][phase]
        assert set(stats) == {"mean_ms", "std_ms", "min_ms", "max_ms", "median_ms", "rounds"}
        assert stats["rounds"] == 5
        assert stats["min_ms"] <= stats["median_ms"] <= stats["max_ms"]
    assert isinstance(doc["memory"]["peak_bytes"], int)
    parts = doc["memory"]["breakdown"]
    assert set(parts) == {"parameters", "gradients", "optimizer_state", "activations"}
    assert sum(parts.values()) == doc["memory"]["peak_bytes"]
    assert doc["flops"]["total"] == sum(doc["flops"]["breakdown"].values()) > 0
    assert set(doc["hardware"]) == {"cpu", "cores", "torch", "cuda_available", "gpu_name",
                                    "gpu_memory_bytes"}
    assert "timestamp" in doc
    # Progress went to stderr, one line per stage (not a terminal here); no module timing
    # for --json, whose document has no module times.
    assert "modelprof bench resnet18: forward ..." in captured.err
    assert "module times" not in captured.err


def test_the_report_lists_the_slowest_modules(capsys: Capsys) -> None:
    code = main(["bench", "resnet18", "--input-shape", "2,3,32,32", "--rounds", "1",
                 "--warmup", "0", "--top", "3", "--optimizer", "adamw", "--threads", "1"])
    out = capsys.readouterr().out
    assert code == 0
    assert out.startswith("bench resnet18 on cpu (float32), input 2x3x32x32, optimizer adamw")
    for label in ("forward", "backward", "training step", "memory: peak", "FLOPs:",
                  "hardware:"):
        assert label in out
    table = out.split("slowest modules")[1].splitlines()
    header = next(i for i, line in enumerate(table) if line.split()[:2] == ["module", "type"])
    assert "hooks included" in " ".join(table[:header])  # the title, wrapped to the terminal
    assert len(table) - header - 1 == 3  # three modules under the header


def test_batch_and_arch_reach_the_model(capsys: Capsys) -> None:
    code = main(["bench", "resnet18", "--input-shape", "1,3,32,32", "--batch", "2",
                 "--arch", "num_classes=10", "--rounds", "1", "--warmup", "0", "--json"])
    doc = json.loads(capsys.readouterr().out)
    assert code == 0
    # fc 512 -> 10 at batch 2: 2*2*512*10 multiply-add FLOPs + 2*10 bias adds
    assert doc["flops"]["breakdown"]["matmul"] == 2 * 2 * 512 * 10 + 2 * 10


def test_help_ends_with_examples_and_quotes_the_hook_overhead(capsys: Capsys) -> None:
    assert main(["bench", "--help"]) == 0
    out = capsys.readouterr().out
    assert "hooks" in out and "resnet50" in out and "%" in out.split("Examples:")[0]
    examples = out.split("Examples:")[1].strip().splitlines()
    assert examples and all(line.strip().startswith("modelprof bench") for line in examples)


@pytest.mark.parametrize(("argv", "message"), [
    (["--optimizer", "lbfgs"], "invalid choice: 'lbfgs'"),
    (["--rounds", "0"], "expected a whole number >= 1"),
    (["--batch", "x"], "expected a whole number >= 1"),
])
def test_bad_options_are_usage_errors(capsys: Capsys, argv: list[str], message: str) -> None:
    assert main(["bench", "resnet18", *argv]) == 2
    assert message in capsys.readouterr().err


def test_a_failing_measurement_is_one_error_line(capsys: Capsys) -> None:
    # At 32 px resnet18 ends in 1x1 maps; batch 1 leaves train-mode batch norm one value.
    code = main(["bench", "resnet18", "--input-shape", "1,3,32,32", "--rounds", "1",
                 "--warmup", "0", "--json"])
    captured = capsys.readouterr()
    assert code == 2 and captured.out == ""
    assert "modelprof: error: bench: the backward failed" in captured.err
    assert "larger batch" in captured.err
    # The error names the option that fixes it, with the user's own shape at batch 2.
    assert "--input-shape 2,3,32,32" in captured.err


def test_unknown_model_suggests_names(capsys: Capsys) -> None:
    assert main(["bench", "resnet19", "--rounds", "1"]) == 2
    assert "'resnet18'" in capsys.readouterr().err.lower()


# -- modelprof graph --timed ---------------------------------------------------------------------

def test_timed_graph_json_has_forward_ms_on_every_module_node(capsys: Capsys) -> None:
    # The command, at a small input and few rounds.
    code = main(["graph", "resnet18", "--timed", "--format", "json", "--input-shape",
                 "1,3,32,32", "--rounds", "2"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    doc = json.loads(captured.out)
    modules = [n for n in doc["nodes"] if n["kind"] == "module"]
    assert len(modules) > 20
    assert all(isinstance(n["forward_ms"], float) and n["forward_ms"] >= 0 for n in modules)
    by_module = {n["module"]: n["forward_ms"] for n in modules}
    # A block's time contains its convolution's (JSON keeps 6 decimals).
    assert by_module["layer1.0"] >= by_module["layer1.0.conv1"] - 1e-6
    assert "module times" in captured.err


@pytest.mark.parametrize(("fmt", "marker"), [("txt", "forward_ms"), ("dot", ' ms"];')])
def test_timed_graph_text_and_dot_show_the_times(capsys: Capsys, fmt: str, marker: str) -> None:
    code = main(["graph", "resnet18", "--timed", "--format", fmt, "--input-shape", "1,3,32,32",
                 "--rounds", "1"])
    out = capsys.readouterr().out
    assert code == 0 and marker in out
    if fmt == "txt":
        header = next(line for line in out.splitlines() if line.strip().startswith("id"))
        assert "forward_ms" in header


def test_untimed_graph_json_has_no_forward_ms(capsys: Capsys) -> None:
    assert main(["graph", "resnet18", "--format", "json", "--input-shape", "1,3,32,32"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert all("forward_ms" not in n for n in doc["nodes"])


def test_timed_with_detail_is_refused(capsys: Capsys) -> None:
    assert main(["graph", "resnet18", "--timed", "--detail"]) == 2
    assert "--timed times modules" in capsys.readouterr().err


def _stats(median: float, low: float, high: float, std: float) -> dict[str, float | int]:
    return {"median_ms": median, "mean_ms": median, "min_ms": low, "max_ms": high,
            "std_ms": std, "rounds": 10}


def test_bench_warns_when_its_rounds_spread_as_on_a_busy_machine() -> None:
    # Seen before: forward medians of 4.55 ms and 220 ms (std 93.5 ms) on a busy runner, no word.
    from pytest_modelprof.cli.bench import busy_warnings
    from pytest_modelprof.runtime.bench_document import BenchReport

    def doc(forward: dict[str, float | int]) -> BenchReport:
        quiet = _stats(10.0, 9.8, 10.6, 0.2)
        return BenchReport.model_validate({
            "runtime": {"forward": forward, "backward": quiet, "training_step": quiet},
            "memory": {"peak_bytes": 0, "breakdown": {"parameters": 0, "gradients": 0,
                                                       "optimizer_state": 0, "activations": 0}},
            "flops": {"total": 0, "breakdown": {}},
            "hardware": {"cpu": "x", "cores": 2, "torch": "t", "cuda_available": False,
                         "gpu_name": None, "gpu_memory_bytes": None},
            "timestamp": "2026-11-25T00:00:00Z",
        })

    (line,) = busy_warnings(doc(_stats(220.0, 4.55, 240.0, 93.5)))
    assert line.startswith("forward rounds spread from 4.550 to 240.0 ms") and "busy" in line
    assert busy_warnings(doc(_stats(4.6, 4.55, 5.1, 0.1))) == []


DEEP_NAMES = """
from collections import OrderedDict

import torch.nn as nn


def make():
    inner = OrderedDict(
        a_rather_long_convolution_layer_name=nn.Conv2d(3, 4, 3, padding=1),
        and_an_activation_with_a_long_name=nn.ReLU(),
    )
    return nn.Sequential(OrderedDict(
        first_encoder_stage_with_a_very_long_name=nn.Sequential(inner),
        second_encoder_stage_with_a_very_long_name=nn.Conv2d(4, 4, 1),
    ))
"""


def test_timed_graph_text_fits_100_columns_with_long_module_names(
    capsys: Capsys, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Seen before: `modelprof graph --timed` had 31 of 158 lines over 100 columns.
    (tmp_path / "deep_names.py").write_text(DEEP_NAMES)
    monkeypatch.syspath_prepend(str(tmp_path))
    code = main(["graph", "deep_names:make", "--timed", "--format", "txt", "--input-shape",
                 "1,3,8,8", "--rounds", "1"])
    out = capsys.readouterr().out
    assert code == 0 and "forward_ms" in out
    wide = [line for line in out.splitlines() if len(line) > 100]
    assert wide == []
    assert "first_encoder" in out and "\u2026" in out  # long names cut in the middle, kept


def test_machine_adds_the_forward_predicted_on_that_gpu(capsys: Capsys) -> None:
    code = main(["bench", "resnet18", "--input-shape", "2,3,32,32", "--rounds", "1",
                 "--top", "0", "--machine", "h100", "--precision", "fp32", "--json"])
    assert code == 0
    predicted = json.loads(capsys.readouterr().out)["predicted"]
    assert predicted["machine"] == "h100" and predicted["precision"] == "fp32"
    assert predicted["forward_ms"] > 0 and predicted["samples_per_s"] > 0
    # The same model on a slower GPU is predicted slower (the counts are the same).
    assert main(["bench", "resnet18", "--input-shape", "2,3,32,32", "--rounds", "1",
                 "--top", "0", "--machine", "t4", "--precision", "fp32", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["predicted"]["forward_ms"] > predicted["forward_ms"]


def test_a_wrong_machine_gets_did_you_mean(capsys: Capsys) -> None:
    code = main(["bench", "resnet18", "--input-shape", "2,3,32,32", "--rounds", "1",
                 "--top", "0", "--machine", "h1000"])
    assert code == 2 and "did you mean 'h100'" in capsys.readouterr().err
