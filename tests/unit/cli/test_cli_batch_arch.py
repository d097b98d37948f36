"""``--batch`` and sweeps of a named model whose ``--arch`` changes its input:
the inputs follow the model as built (image size, positions), not the registry's default."""

from __future__ import annotations

import json

import pytest

from pytest_modelprof.cli import main

Capsys = pytest.CaptureFixture[str]

# A one-layer ViT at 64x64: seconds to build and run on the CPU.
TINY_VIT = [
    "num_hidden_layers=1",
    "hidden_size=32",
    "num_attention_heads=2",
    "intermediate_size=64",
    "image_size=64",
]


def _arch(values: list[str]) -> list[str]:
    return [arg for value in values for arg in ("--arch", value)]


@pytest.fixture(autouse=True)
def _needs_hf() -> None:
    from pytest_modelprof.errors import ModelNotFoundError
    from pytest_modelprof.models import resolve

    try:
        resolve("hf:vit")
    except ModelNotFoundError:
        pytest.skip("hf: model names are not available in this build")


def test_sweep_over_batch_builds_images_at_the_arch_image_size(capsys: Capsys) -> None:
    code = main(["sweep", "hf:vit", "--batch", "1,2", "--no-latency", "--json", *_arch(TINY_VIT)])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    (series,) = json.loads(captured.out)["series"]
    assert [p["input_shapes"][0] for p in series["points"]] == [[1, 3, 64, 64], [2, 3, 64, 64]]


def test_sweep_follows_the_arch_number_of_channels(capsys: Capsys) -> None:
    code = main(
        [
            "sweep",
            "hf:vit",
            "--batch",
            "1,2",
            "--no-latency",
            "--json",
            *_arch([*TINY_VIT, "num_channels=1"]),
        ]
    )
    captured = capsys.readouterr()
    assert code == 0, captured.err
    (series,) = json.loads(captured.out)["series"]
    assert series["points"][1]["input_shapes"][0] == [2, 1, 64, 64]


def test_sweep_of_a_bert_with_fewer_positions_than_the_default_length(capsys: Capsys) -> None:
    code = main(
        [
            "sweep",
            "hf:bert",
            "--batch",
            "1,2",
            "--no-latency",
            "--json",
            *_arch(
                [
                    "num_hidden_layers=1",
                    "hidden_size=32",
                    "num_attention_heads=2",
                    "intermediate_size=64",
                    "max_position_embeddings=64",
                ]
            ),
        ]
    )
    captured = capsys.readouterr()
    assert code == 0, captured.err
    (series,) = json.loads(captured.out)["series"]
    # 128 tokens by default, capped at the 64 positions this model has.
    assert [p["input_shapes"][0] for p in series["points"]] == [[1, 64], [2, 64]]


def test_bench_batch_keeps_the_arch_image_size(capsys: Capsys) -> None:
    code = main(
        [
            "bench",
            "hf:vit",
            "--batch",
            "2",
            "--rounds",
            "1",
            "--warmup",
            "0",
            "--threads",
            "1",
            *_arch(TINY_VIT),
        ]
    )
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert "input 2x3x64x64," in captured.out.splitlines()[0]
