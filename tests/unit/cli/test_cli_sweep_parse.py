"""``modelprof sweep``'s arguments are read without torch: ``--help`` and a usage error stay fast.

Each case runs in a fresh interpreter, as a user's shell does, and lists the heavy modules it
imported; the test process itself has torch loaded already.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys

import pytest

from pytest_modelprof.cli.sweep import parse_axis_sizes

SCRIPT = """
import contextlib, io, json, sys
from pytest_modelprof.cli import build_parser
argv = json.loads(sys.argv[1])
code = 0
with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()) as err:
    try:
        args = build_parser().parse_args(argv)
        parsed = {k: v for k, v in vars(args).items() if k in ("batch", "seq_len", "sweep_arch")}
    except SystemExit as exc:
        code, parsed = exc.code, {}
print(json.dumps({"code": code, "parsed": parsed, "stderr": err.getvalue(),
                  "heavy": sorted(m for m in ("torch", "pydantic") if m in sys.modules)}))
"""


def _parse(argv: list[str]) -> dict[str, object]:
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, json.dumps(argv)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    result: dict[str, object] = json.loads(done.stdout)
    return result


def test_parsing_a_sweep_imports_no_torch() -> None:
    result = _parse(
        [
            "sweep",
            "resnet18",
            "--batch",
            "1,8,32",
            "--seq-len",
            "16",
            "--sweep-arch",
            "num_classes=10,100",
        ]
    )
    assert result["code"] == 0
    assert result["parsed"] == {
        "batch": [1, 8, 32],
        "seq_len": [16],
        "sweep_arch": [["num_classes", [10, 100]]],
    }
    assert result["heavy"] == []


def test_sweep_help_imports_no_torch() -> None:
    result = _parse(["sweep", "--help"])
    assert result["code"] == 0
    assert result["heavy"] == []


@pytest.mark.parametrize("value", ["8,1", "1,1", "0,4"])
def test_a_bad_axis_is_a_usage_error_without_torch(value: str) -> None:
    # Two or more values must be positive and increasing; the error names the value.
    result = _parse(["sweep", "resnet18", "--batch", value])
    assert result["code"] == 2
    assert repr(value) in str(result["stderr"])
    assert result["heavy"] == []


def test_axis_sizes_hold_one_value_and_sweep_increasing_ones() -> None:
    assert parse_axis_sizes("1,8,32") == [1, 8, 32]
    assert parse_axis_sizes("32") == [32]  # held there, not swept
    for bad in ["1,x", "8,1", "4,4", "0,4", ""]:
        with pytest.raises(argparse.ArgumentTypeError, match=re.escape(repr(bad))):
            parse_axis_sizes(bad)
