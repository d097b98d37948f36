"""``modelprof`` in-process (``main([...])``) and once through ``python -m``."""

from __future__ import annotations

import argparse
import csv
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch
from torch import nn

from pytest_modelprof import __version__
from pytest_modelprof.cli import COMMANDS, main
from pytest_modelprof.cli._common import parse_arch, parse_shape, parse_tolerance
from pytest_modelprof.models import default_registry
from pytest_modelprof.profile import profile_model
from pytest_modelprof.schema import ModelProfile
from pytest_modelprof.units import format_bytes, format_count

WIDTH = 100
SHAPE = "1,3,64,64"
Capsys = pytest.CaptureFixture[str]


@pytest.fixture(autouse=True)
def _terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    """A terminal of WIDTH columns (the text fits any width: tests/examples runs at 80)."""
    monkeypatch.setenv("COLUMNS", str(WIDTH))


def _run(capsys: Capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def _widest(text: str) -> int:
    return max((len(line) for line in text.splitlines()), default=0)


@pytest.fixture(scope="module")
def resnet18() -> ModelProfile:
    """Computed independently of the CLI, through the Python API."""
    return profile_model("resnet18", input_shape=(1, 3, 64, 64))


# -- profile -------------------------------------------------------------------------------------

def test_profile_prints_the_summary_with_units(capsys: Capsys, resnet18: ModelProfile) -> None:
    code, out, err = _run(capsys, "profile", "resnet18", "--input-shape", SHAPE)
    assert code == 0, err
    summary = {line.split("  ")[1].strip(): line for line in out.splitlines()
               if line.startswith("  ") and "  " in line[2:]}
    # 148_557_824 MACs at 64x64 (the 224x224 1.81 G scaled by (64/224)^2, plus the classifier).
    assert format_count(resnet18.total_macs, "MACs") == "149 MMACs"
    assert summary["MACs"].split()[-2:] == ["149", "MMACs"]
    assert format_count(resnet18.total_flops, "FLOPs") in summary["FLOPs"]
    assert format_bytes(resnet18.total_traffic) in summary["Traffic"]
    assert "11.7 M params" in summary["Parameters"]
    assert "1x3x64x64 float32" in summary["Inputs"]
    for section in ("Operation breakdown", "Bottleneck analysis", "Top 10 of"):
        assert section in out
    assert _widest(out) <= WIDTH


def test_profile_top_layers_are_the_costliest(capsys: Capsys, resnet18: ModelProfile) -> None:
    code, out, _ = _run(capsys, "profile", "resnet18", "--input-shape", SHAPE, "--top", "3")
    assert code == 0
    top = out.split("Top 3 of")[1].splitlines()[3:6]
    costliest = max(resnet18.layers, key=lambda layer: layer.flops)
    assert top[0].split()[:3] == ["1", costliest.name, costliest.type]
    assert len([line for line in top if line.strip()[:1].isdigit()]) == 3


def test_profile_verbose_and_showshape(capsys: Capsys) -> None:
    code, out, _ = _run(capsys, "profile", "resnet18", "--input-shape", SHAPE, "--verbose",
                        "--showshape")
    assert code == 0
    assert "Module tree" in out and "Output shape" in out
    # layer1.0.conv1 keeps 64 channels at a quarter of the 32x32 stem resolution: 16x16.
    conv = next(line for line in out.split("Module tree")[1].splitlines()
                if line.strip().startswith("conv1") and "1x64x16x16" in line)
    assert conv.startswith("        conv1")  # nested three levels under the root
    assert _widest(out) <= WIDTH


def test_profile_output_json_round_trips(tmp_path: Path, capsys: Capsys,
                                         resnet18: ModelProfile) -> None:
    target = tmp_path / "sub" / "r18.json"
    code, _, err = _run(capsys, "profile", "resnet18", "--input-shape", SHAPE, "-o", str(target))
    assert code == 0 and f"wrote {target} (json)" in err
    text = target.read_text(encoding="utf-8")
    loaded = ModelProfile.from_json(text)
    assert loaded.to_json() == text  # deterministic writer: load + dump is the identity
    assert loaded.total_macs == resnet18.total_macs
    data = json.loads(text)
    for key in ("model", "total_flops", "total_macs", "total_params", "total_traffic",
                "arithmetic_intensity", "layers"):
        assert key in data
    assert set(data["layers"][0]) >= {"name", "type", "flops", "traffic", "arithmetic_intensity",
                                      "bottleneck"}


def test_profile_output_csv_has_one_row_per_layer(tmp_path: Path, capsys: Capsys,
                                                  resnet18: ModelProfile) -> None:
    target = tmp_path / "r18.csv"
    assert _run(capsys, "profile", "resnet18", "--input-shape", SHAPE, "-o", str(target))[0] == 0
    with target.open(newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    assert len(rows) == len(resnet18.layers)
    assert [r["name"] for r in rows] == [layer.name for layer in resnet18.layers]
    assert sum(int(r["flops"]) for r in rows) == resnet18.total_flops
    conv1 = rows[0]
    assert (conv1["name"], conv1["type"], conv1["output_shape"]) == ("conv1", "Conv2d",
                                                                     "1x64x32x32")


def test_profile_json_to_stdout(capsys: Capsys, resnet18: ModelProfile) -> None:
    code, out, _ = _run(capsys, "profile", "resnet18", "--input-shape", SHAPE, "--json")
    assert code == 0
    assert ModelProfile.from_json(out).total_flops == resnet18.total_flops


def test_profile_machine_changes_the_bottleneck_split(capsys: Capsys) -> None:
    # Against a 1000 FLOPs/byte machine no resnet18 layer is compute-bound.
    code, out, _ = _run(capsys, "profile", "resnet18", "--input-shape", SHAPE, "--machine",
                        "1000", "--top", "0")
    assert code == 0
    assert "1000 FLOPs/B" in out
    compute = next(line for line in out.splitlines() if line.strip().startswith("compute-bound"))
    assert compute.split()[1] == "0"


def test_profile_arch_kwargs_reach_the_builder(capsys: Capsys) -> None:
    code, out, err = _run(capsys, "profile", "resnet18", "--input-shape", SHAPE,
                          "--arch", "num_classes=10", "--json")
    assert code == 0, err
    fc = next(layer for layer in ModelProfile.from_json(out).layers if layer.name == "fc")
    assert fc.params == 512 * 10 + 10


def test_unknown_model_exits_2_and_suggests(capsys: Capsys) -> None:
    code, out, err = _run(capsys, "profile", "resnet1")
    assert code == 2 and out == ""
    assert err.startswith("modelprof: error: ") and err.count("\n") == 1  # one line
    assert "resnet18" in err and "Traceback" not in err


@pytest.mark.parametrize("bad", ["1,3,abc", "1,0,64", "", "x"])
def test_bad_input_shape_is_a_usage_error(capsys: Capsys, bad: str) -> None:
    code, _, err = _run(capsys, "profile", "resnet18", "--input-shape", bad)
    assert code == 2
    assert "--input-shape" in err and "such as 1,3,224,224" in err


def test_shape_the_model_rejects_names_the_layer(capsys: Capsys) -> None:
    code, _, err = _run(capsys, "profile", "resnet18", "--input-shape", "1,5,64,64")
    assert code == 2 and err.count("\n") == 1
    assert "conv1" in err and "(1, 5, 64, 64)" in err


def test_a_factory_without_a_shape_names_the_cli_option(
    capsys: Capsys, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "shapeless_pkg").mkdir()
    (tmp_path / "shapeless_pkg" / "__init__.py").write_text("")
    (tmp_path / "shapeless_pkg" / "mod.py").write_text(
        "import torch\n\ndef factory():\n    return torch.nn.Linear(4, 2)\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    assert main(["profile", "shapeless_pkg.mod:factory"]) == 2
    err = capsys.readouterr().err
    assert "--input-shape" in err
    assert "--modelprof-input-shape" not in err  # no such option anywhere


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--machine", "tpu-v9"], "unknown machine 'tpu-v9'"),
        (["--dtype", "float8"], "unknown dtype 'float8'"),
        (["--arch", "image_size"], "expected KEY=VALUE"),
        (["--top", "-1"], "expected a number of layers"),
        (["--mode", "quantum"], "invalid choice"),
        (["--device", "bogus"], "unknown device 'bogus'"),
    ],
)
def test_bad_options_are_usage_errors(capsys: Capsys, argv: list[str], message: str) -> None:
    code, _, err = _run(capsys, "profile", "resnet18", *argv)
    assert code == 2 and message in err


def test_output_with_unknown_suffix(tmp_path: Path, capsys: Capsys) -> None:
    code, _, err = _run(capsys, "profile", "resnet18", "--input-shape", SHAPE, "-o",
                        str(tmp_path / "r18.xlsx"))
    assert code == 2 and ".csv, .json" in err


class _Spectral(nn.Module):
    """A linear layer, then an FFT (no cost formula), and a head that never runs."""

    def __init__(self) -> None:
        super().__init__()
        self.proj = nn.Linear(16, 16)
        self.unused_head = nn.Linear(16, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        spectrum: torch.Tensor = torch.fft.rfft(self.proj(x)).abs()
        return spectrum


@pytest.fixture
def spectral() -> Iterator[str]:
    name = "cli_test_spectral"
    default_registry.register(name, _Spectral, input_shape=(2, 16))
    yield name
    default_registry.unregister(name)


def test_uncounted_ops_are_shown_and_strict_fails(capsys: Capsys, spectral: str) -> None:
    code, out, _ = _run(capsys, "profile", spectral)
    assert code == 0
    uncounted = out.split("Uncounted ops:")[1]
    assert "aten._fft_r2c.default" in uncounted and "1x" in uncounted
    assert "Uncalled modules: 1" in out and "unused_head" in out
    code, out, err = _run(capsys, "profile", spectral, "--fail-on-uncounted")
    assert code == 2 and out == ""
    assert err.startswith("modelprof: error: ") and "aten._fft_r2c.default x1" in err


# -- list ----------------------------------------------------------------------------------------

def test_list_filter(capsys: Capsys) -> None:
    code, out, _ = _run(capsys, "list", "--filter", "resnet")
    assert code == 0
    names = set(out.split())
    assert "resnet50" in names and "resnet18" in names
    assert "vit_b_16" not in names
    assert "torchvision.classification (" in out
    assert out.splitlines()[0].split()[1:4] == ["models", "matching", "'resnet'"]


def test_list_json(capsys: Capsys) -> None:
    code, out, _ = _run(capsys, "list", "--filter", "vit_b", "--json")
    assert code == 0
    groups = json.loads(out)
    assert "vit_b_16" in groups["torchvision.classification"]


# -- help and version ----------------------------------------------------------------------------

@pytest.mark.parametrize("command", [c.name for c in COMMANDS])
def test_every_subcommand_help_has_examples(capsys: Capsys, command: str) -> None:
    code, out, _ = _run(capsys, command, "--help")
    assert code == 0
    assert "Examples:" in out and f"modelprof {command}" in out.split("Examples:")[1]


def test_top_level_help_lists_commands(capsys: Capsys, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "100")  # argparse wraps to the terminal; keep summaries whole
    code, out, _ = _run(capsys, "--help")
    assert code == 0
    for command in COMMANDS:
        assert f"{command.name}" in out and command.summary in out


def test_version(capsys: Capsys) -> None:
    code, out, _ = _run(capsys, "--version")
    assert code == 0 and out.strip() == f"modelprof {__version__}"


def test_no_command_prints_help_and_exits_2(capsys: Capsys) -> None:
    code, _, err = _run(capsys)
    assert code == 2 and "commands:" in err


# -- option parsers ------------------------------------------------------------------------------

def test_parse_shape_accepts_common_spellings() -> None:
    for text in ("1,3,224,224", "1x3x224x224", "(1, 3, 224, 224)", "1 3 224 224"):
        assert parse_shape(text) == (1, 3, 224, 224)


def test_parse_arch_reads_python_literals() -> None:
    assert parse_arch("image_size=518") == ("image_size", 518)
    assert parse_arch("scale=0.5") == ("scale", 0.5)
    assert parse_arch("flag=True") == ("flag", True)
    assert parse_arch("variant=b") == ("variant", "b")  # not a literal: kept as text
    with pytest.raises(argparse.ArgumentTypeError):
        parse_arch("2x=1")


def test_parse_tolerance() -> None:
    assert parse_tolerance("0.05") == 0.05
    assert parse_tolerance("5%") == pytest.approx(0.05)
    for bad in ("-1", "abc", "nan"):
        with pytest.raises(argparse.ArgumentTypeError):
            parse_tolerance(bad)


# -- the installed entry point -------------------------------------------------------------------

def test_module_entry_point(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "pytest_modelprof.cli", "profile", "resnet18", "--input-shape",
         "1,3,32,32", "--top", "2", "--output", str(tmp_path / "r.json")],
        capture_output=True, text=True, timeout=120, check=False,
    )
    assert result.returncode == 0, result.stderr
    profile = ModelProfile.from_json((tmp_path / "r.json").read_text(encoding="utf-8"))
    assert format_count(profile.total_macs, "MACs") in result.stdout
    assert "Top 2 of" in result.stdout
    assert _widest(result.stdout) <= WIDTH


def test_sweep_fits_exponents_and_gates_growth(capsys: pytest.CaptureFixture[str]) -> None:
    # Batch is linear for a CNN: exponent 1.00; a limit of 0.5 must fail with exit 1.
    args = ["sweep", "resnet18", "--batch", "1,2,4", "--input-shape", "1,3,32,32", "--no-latency"]
    assert main(args) == 0
    assert "FLOPs ^1.00" in capsys.readouterr().out
    assert main([*args, "--max-flops-growth", "0.5"]) == 1
    assert "above max_flops_growth=0.5" in capsys.readouterr().err
    assert main(["sweep", "resnet18"]) == 2


def test_help_does_not_import_torch() -> None:
    # --help must stay instant: building the parser may not import torch (or pydantic).
    code = (
        "import sys\n"
        "from pytest_modelprof.cli import build_parser\n"
        "build_parser()\n"
        "print('torch' in sys.modules, 'pydantic' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False False"


def test_profile_warms_up_only_models_that_need_it(capsys: pytest.CaptureFixture[str]) -> None:
    # resnet18 has no lazy state: one capture. YOLO sets anchors on its first forward: two.
    assert main(["profile", "resnet18", "--input-shape", "1,3,32,32", "--top", "1"]) == 0
    capture_line = next(ln for ln in capsys.readouterr().out.splitlines() if "Capture" in ln)
    assert "after a warm-up forward" not in capture_line
    assert main(["profile", "yolov8n.yaml", "--input-shape", "1,3,64,64", "--top", "1"]) == 0
    capture_line = next(ln for ln in capsys.readouterr().out.splitlines() if "Capture" in ln)
    assert "after a warm-up forward" in capture_line


TOKEN_LM = """
import torch.nn as nn


class TinyLM(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(100, 16)
        self.head = nn.Linear(16, 100)

    def forward(self, ids):
        return self.head(self.emb(ids))


def make_lm():
    return TinyLM()
"""


def test_a_users_token_model_profiles_from_the_cli(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # Seen before: --input-shape 1,64 gave float inputs, there was no input dtype option, and
    # --seq-len answered "pass input_shape=(...)".
    (tmp_path / "my_token_lm.py").write_text(TOKEN_LM)
    monkeypatch.syspath_prepend(str(tmp_path))
    assert main(["profile", "my_token_lm:make_lm", "--seq-len", "64", "--top", "0"]) == 0
    assert "1x64 int64" in capsys.readouterr().out
    argv = ["profile", "my_token_lm:make_lm", "--input-shape", "2,32", "--input-dtype", "long"]
    assert main([*argv, "--top", "0"]) == 0
    assert "2x32 int64" in capsys.readouterr().out
    assert main(["profile", "resnet18", "--seq-len", "64"]) != 0
    err = capsys.readouterr().err
    assert "first input is token ids" in err and "input_shape=(" not in err


@pytest.mark.parametrize(
    ("argv", "words"),
    [
        (["resnet18", "--seconds", "1"], ("resnet18", "--seconds", "--input-shape")),
        (["resnet18", "--seconds", "0"], ("--seconds must be positive",)),
        (["resnet18", "--seq-len", "0"], ("--seq-len must be a positive",)),
    ],
)
def test_input_options_a_model_cannot_take_are_answered_in_cli_words(
    capsys: pytest.CaptureFixture[str], argv: list[str], words: tuple[str, ...]
) -> None:
    # Seen before: "modelprof profile hf:gpt2 --seconds 1" answered "(use input_shape=(...))";
    # a CLI user gets the options' names, not input_shape_for's arguments.
    assert main(["profile", *argv]) == 2
    err = capsys.readouterr().err
    assert all(w in err for w in words), err
    assert "input_shape=" not in err and "seq_len" not in err


def test_list_is_a_screenful_per_source_unless_asked_for_all(capsys: Capsys) -> None:
    # Seen before: `modelprof list` printed every one of about 2,400 names (1,131 lines).
    code, out, _ = _run(capsys, "list")
    assert code == 0
    lines = out.splitlines()
    assert len(lines) <= 80
    assert any("more: modelprof list --source timm" in line for line in lines)
    assert "Every name: modelprof list --all, or --filter TEXT" in out
    code, everything, _ = _run(capsys, "list", "--all")
    assert code == 0 and len(everything.splitlines()) > len(lines)
    assert everything.split()[0] == out.split()[0]  # the same total either way
    code, timm, _ = _run(capsys, "list", "--source", "timm")
    assert code == 0 and "more:" not in timm and "resnet50" not in timm.split()
    assert timm.splitlines()[2].startswith("timm (")
    code, _, err = _run(capsys, "list", "--source", "tim")
    assert code == 2 and "did you mean 'timm'?" in err


@pytest.mark.parametrize(("typo", "meant"), [("histroy", "history"), ("becnh", "bench")])
def test_a_mistyped_command_gets_did_you_mean(capsys: Capsys, typo: str, meant: str) -> None:
    assert main([typo, "resnet18"]) == 2
    err = capsys.readouterr().err
    assert f"did you mean '{meant}'" in err
    assert len(err.strip().splitlines()) <= 2  # usage line + one error line, no choice list dump
