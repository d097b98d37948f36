"""One row type and one record type from the judge to the results file."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from pytest_modelprof.baseline.check import Check
from pytest_modelprof.errors import ReportError
from pytest_modelprof.gate.evaluate import evaluate
from pytest_modelprof.gate.limits import Limits
from pytest_modelprof.gate.settings import SessionSettings
from pytest_modelprof.results.document import RunInfo, RunResults, load_document
from pytest_modelprof.results.record import ProfileResult, records_from_json, records_to_json
from pytest_modelprof.schema import ModelProfile

MakeProfile = Callable[..., ModelProfile]


def _regressed(tmp_path: Path, make_profile: MakeProfile) -> ProfileResult:
    session = SessionSettings(baseline_dir=tmp_path / "baselines", update=True)
    evaluate(
        make_profile(flops=1_000_000),
        nodeid="t.py::test_m",
        name=None,
        limits=Limits(),
        session=session,
        rootdir=tmp_path,
    )
    session = SessionSettings(baseline_dir=tmp_path / "baselines")
    out = evaluate(
        make_profile(flops=1_300_000),
        nodeid="t.py::test_m",
        name=None,
        limits=Limits(),
        session=session,
        rootdir=tmp_path,
    )
    return out.record


def test_the_record_is_the_results_entry_and_holds_the_judges_rows(
    tmp_path: Path, make_profile: MakeProfile
) -> None:
    record = _regressed(tmp_path, make_profile)
    assert record.status == "regressed"
    flops = next(c for c in record.checks if c.metric == "flops")
    assert isinstance(flops, Check) and flops.failed
    # conv1 grew 750 K -> 975 K FLOPs, fc 250 K -> 325 K: the row names both, conv1 first.
    assert [d["name"] for d in flops.detail["layers"]] == ["conv1", "fc"]
    # Over the xdist transport and through the results file, the same rows come back.
    (again,) = records_from_json(records_to_json([record]))
    assert again.checks == record.checks and again.profile == record.profile
    path = tmp_path / "results.json"
    path.write_text(RunResults(run=RunInfo(), tests=[record]).to_json())
    loaded = load_document(path)
    assert isinstance(loaded, RunResults)
    assert [type(c) for c in loaded.tests[0].checks] == [Check] * len(record.checks)
    assert loaded.tests[0].metrics["flops"] == 1_300_000


def test_a_row_with_a_field_it_does_not_know_is_refused(
    tmp_path: Path, make_profile: MakeProfile
) -> None:
    record = _regressed(tmp_path, make_profile)
    text = RunResults(tests=[record]).to_json().replace('"hard": false', '"hard": false, "x": 1', 1)
    path = tmp_path / "results.json"
    path.write_text(text)
    with pytest.raises(ReportError, match=r"tests\.0\.checks\.0\.x"):
        load_document(path)
