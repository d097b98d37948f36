"""A profile with a warning row has the status "warning", not "ok"."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from pytest_modelprof.gate.documents import compare_profiles
from pytest_modelprof.gate.evaluate import evaluate
from pytest_modelprof.gate.limits import Limits
from pytest_modelprof.gate.settings import SessionSettings
from pytest_modelprof.report.summary import summary_lines
from pytest_modelprof.schema import ModelProfile

MakeProfile = Callable[..., ModelProfile]


def _moved(make_profile: MakeProfile) -> tuple[ModelProfile, ModelProfile]:
    """Peak memory +20 % on another torch: a kernel-dependent count, so it warns."""
    base = make_profile(peak=50_000)
    env = base.environment.model_copy(update={"torch_version": "2.14.1"})
    return base, make_profile(peak=60_000, environment=env)


def test_the_gate_records_a_warning_as_warning(tmp_path: Path, make_profile: MakeProfile) -> None:
    base, moved = _moved(make_profile)
    settings = SessionSettings(baseline_dir=tmp_path / "baselines")
    updating = SessionSettings(baseline_dir=tmp_path / "baselines", update=True)
    kwargs = dict(nodeid="t.py::test_m", name=None, limits=Limits(), rootdir=tmp_path)
    evaluate(base, session=updating, **kwargs)  # type: ignore[arg-type]
    out = evaluate(moved, session=settings, **kwargs)  # type: ignore[arg-type]
    assert out.failure is None and out.record.warnings
    assert out.record.status == "warning"
    assert summary_lines([out.record])[1].split()[0] == "warning"


def test_compare_gives_a_warning_its_status(make_profile: MakeProfile) -> None:
    base, moved = _moved(make_profile)
    result = compare_profiles(base, moved, Limits(), nodeid="t.py::test_m")
    assert result.warnings and not result.failed
    assert result.status == "warning"
