"""``modelprof profile --machine GPU --precision P --batch N``: the prediction in text and JSON."""

from __future__ import annotations

import json

import pytest

from pytest_modelprof.cli import main


def test_json_adds_the_predicted_block(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(
        [
            "profile",
            "resnet18",
            "--batch",
            "4",
            "--machine",
            "rtx4090",
            "--precision",
            "amp",
            "--mode",
            "meta",
            "--json",
        ]
    )
    doc = json.loads(capsys.readouterr().out)
    assert code == 0
    predicted = doc["predicted"]
    assert (predicted["machine"], predicted["precision"], predicted["batch"]) == (
        "rtx4090",
        "amp",
        4,
    )
    assert predicted["forward_ms"] > 0
    assert predicted["training_step_ms"] > predicted["forward_ms"]
    assert predicted["samples_per_s"] == pytest.approx(4e3 / predicted["forward_ms"], rel=1e-3)
    assert set(predicted["bound_shares"]) == {"compute", "memory", "launch"}
    assert doc["inputs"][0]["shape"][0] == 4  # --batch set the first dimension


def test_text_names_what_the_prediction_is(capsys: pytest.CaptureFixture[str]) -> None:
    main(
        [
            "profile",
            "resnet18",
            "--input-shape",
            "2,3,64,64",
            "--machine",
            "h100",
            "--precision",
            "bf16",
            "--mode",
            "meta",
            "--top",
            "3",
        ]
    )
    text = " ".join(capsys.readouterr().out.split())  # as read, whatever the terminal's width
    assert "Predicted GPU time on h100, precision bf16, batch 2" in text
    assert "calibrated model: median error" in text
    assert "latency" not in text.split("Predicted GPU time")[1]


def test_precision_without_a_gpu_names_the_options(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(
        [
            "profile",
            "resnet18",
            "--input-shape",
            "1,3,32,32",
            "--precision",
            "amp",
            "--mode",
            "meta",
        ]
    )
    assert code != 0
    assert "--precision amp is that of a machine's peak and needs --machine naming one" in (
        capsys.readouterr().err
    )
