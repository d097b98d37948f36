"""A bad option value is a usage error (exit 2) that quotes the value and shows a good one,
before any model is built."""

from __future__ import annotations

import pytest

from pytest_modelprof.cli import main
from pytest_modelprof.cli._common import parse_input_dtype


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (
            ["memory", "resnet18", "--capacity", "0GB"],
            "expected a positive size such as 80GB, got '0GB'",
        ),
        (["memory", "resnet18", "--capacity", "lots"], "write e.g. 80GB"),
        (
            ["profile", "resnet18", "--input-dtype", "uint8"],
            "unknown input dtype 'uint8'; use one of int64, int32, float32",
        ),
        (
            ["fvcore", "--tolerance", "ignore"],
            "a relative tolerance is needed here, such as 0.05 or 5%",
        ),
        (["fvcore", "--models", " , "], "expected comma-separated model names; got ' , '"),
        (["profile", "resnet18", "--input-shape", "1,0,8"], "expected positive integers"),
        (["profile", "resnet18", "--device", "tpu:x"], "unknown device 'tpu:x'"),
        (["profile", "resnet18", "--top", "-1"], "expected a number of layers >= 0; got '-1'"),
    ],
)
def test_a_bad_value_is_a_usage_error_quoting_it(
    argv: list[str], expected: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert expected in err, err


@pytest.mark.parametrize(
    ("given", "dtype"), [("long", "int64"), ("int", "int32"), ("bf16", "bfloat16")]
)
def test_input_dtype_aliases_are_understood(given: str, dtype: str) -> None:
    assert parse_input_dtype(given) == dtype
