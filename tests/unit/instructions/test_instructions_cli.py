"""``modelprof bench --instructions`` where valgrind is missing: one error, before any timing."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_modelprof.cli import main


def test_bench_instructions_without_valgrind_names_the_install(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # no valgrind on it
    code = main(
        [
            "bench",
            "resnet18",
            "--input-shape",
            "1,3,32,32",
            "--rounds",
            "1",
            "--instructions",
            "--json",
        ]
    )
    captured = capsys.readouterr()
    assert code != 0
    assert captured.out == ""  # no document, and no timing was spent first
    assert "apt-get install valgrind" in captured.err
    assert "bench: forward" not in captured.err


def test_bench_help_lists_the_instruction_keys(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "--help"]) == 0
    text = "".join(capsys.readouterr().out.split())  # help wraps lines anywhere
    assert "--instructions" in text
    assert "instructions.{forward,backward,training_step,calls}" in text
