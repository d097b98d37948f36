"""A failure first says what the test itself changed since its baseline (its inputs, its
dtype), which explains the count deltas below it, and still fails on them."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from pytest_modelprof.gate.evaluate import Outcome, evaluate
from pytest_modelprof.gate.limits import Limits
from pytest_modelprof.gate.settings import SessionSettings
from pytest_modelprof.schema import ModelProfile, TensorSpec

MakeProfile = Callable[..., ModelProfile]


def _run(tmp_path: Path, profile: ModelProfile, *, update: bool = False) -> Outcome:
    return evaluate(
        profile,
        nodeid="t.py::test_t",
        name=None,
        limits=Limits().with_values({"max_flops_delta": "0.01"}, "marker"),
        session=SessionSettings(baseline_dir=tmp_path / "baselines", update=update),
        rootdir=tmp_path,
    )


def test_changed_inputs_and_dtype_come_before_the_rows(
    tmp_path: Path, make_profile: MakeProfile
) -> None:
    before = make_profile()
    _run(tmp_path, before, update=True)
    after = make_profile(
        flops=4_000_000,
        inputs=[TensorSpec(shape=[1, 3, 16, 16], dtype="float64")],
        environment=before.environment.model_copy(update={"dtype": "float64"}),
    )
    outcome = _run(tmp_path, after)
    assert outcome.failure is not None  # the limits judge the deltas all the same
    lines = outcome.failure.splitlines()
    inputs = next(i for i, line in enumerate(lines) if "inputs changed:" in line)
    assert lines[inputs].strip() == (
        "inputs changed: 1\u00d73\u00d78\u00d78 float32 \u2192 1\u00d73\u00d716\u00d716 float64"
    )
    assert lines[inputs + 1].strip() == "dtype changed: float32 \u2192 float64"
    flops_row = next(i for i, line in enumerate(lines) if "FLOPs" in line and "\u2192" in line)
    assert inputs < flops_row


def test_an_unchanged_test_has_no_such_note(tmp_path: Path, make_profile: MakeProfile) -> None:
    _run(tmp_path, make_profile(), update=True)
    outcome = _run(tmp_path, make_profile(flops=4_000_000))
    assert outcome.failure is not None
    assert "changed:" not in outcome.failure
