"""The instructions metric as rows: a small tolerance, a budget, another CPU warns,
rewrites within the noise keep the file, and baselines without it do not change."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from pytest_modelprof.baseline.document import BaselineDocument
from pytest_modelprof.baseline.environment import environment_changes
from pytest_modelprof.gate.evaluate import Outcome, evaluate
from pytest_modelprof.gate.limits import Limits
from pytest_modelprof.gate.settings import SessionSettings
from pytest_modelprof.instructions.counts import InstructionCounts
from pytest_modelprof.schema import ModelProfile

MakeProfile = Callable[..., ModelProfile]
CPU = "AMD EPYC 7763 64-Core Processor"


def _counts(forward: int, *, cpu: str = CPU, flags: str = "avx2 fma") -> InstructionCounts:
    return InstructionCounts(
        forward=forward, calls=5, warmup=2, cpu=cpu, cpu_flags=flags, capability="AVX2"
    )


def _evidence(counts: InstructionCounts | None) -> dict[str, dict[str, object]]:
    """What the instructions collector returns (instructions.gate.measure)."""
    if counts is None:
        return {}
    return {"instructions": {**counts.model_dump(mode="json"), "instructions": counts.forward}}


def _run(
    tmp_path: Path,
    profile: ModelProfile,
    counts: InstructionCounts | None,
    *,
    update: bool = False,
    limits: str = "max_instructions_delta=0.01",
) -> Outcome:
    key, _, value = limits.partition("=")
    return evaluate(
        profile,
        nodeid="t.py::test_t",
        name=None,
        limits=Limits().with_values({key: value}, "marker"),
        session=SessionSettings(baseline_dir=tmp_path / "baselines", update=update),
        rootdir=tmp_path,
        evidence=_evidence(counts),
    )


def _row(outcome: Outcome) -> dict[str, object]:
    return next(c for c in outcome.record.checks if c.metric == "instructions")


def test_growth_beyond_the_tolerance_fails_naming_both_counts(
    tmp_path: Path, make_profile: MakeProfile
) -> None:
    profile = make_profile()
    assert _run(tmp_path, profile, _counts(631_529), update=True).failure is None
    assert _row(_run(tmp_path, profile, _counts(635_000))).verdict == "ok"  # +0.55 %
    grown = _run(tmp_path, profile, _counts(1_155_146))
    assert grown.failure is not None
    row = _row(grown)
    assert row.verdict == "regressed"
    # 631,529 -> 1,155,146: the figures and the limit, in the failure message too.
    assert "631,529 instructions \u2192 1.155 M instructions" in str(row.reason)
    assert "limit +1.0 %" in str(row.reason)
    assert "631,529 instructions" in grown.failure


def test_a_budget_holds_without_a_baseline(tmp_path: Path, make_profile: MakeProfile) -> None:
    outcome = _run(tmp_path, make_profile(), _counts(2_000_000), limits="max_instructions=1.5M")
    assert outcome.failure is not None
    assert "over budget max_instructions=1.5 M instructions" in str(_row(outcome).reason)


def test_another_cpu_warns_and_names_it(tmp_path: Path, make_profile: MakeProfile) -> None:
    profile = make_profile()
    _run(tmp_path, profile, _counts(600_000), update=True)
    # Twice the traffic too: the CPU lets no other count off.
    other = _run(
        tmp_path,
        make_profile(memory=200_000),
        _counts(700_000, cpu="Intel Xeon", flags="avx2 avx512f fma"),
    )
    assert _row(other).verdict == "warning"
    assert f"cpu {CPU} \u2192 Intel Xeon" in str(_row(other).reason)
    memory = next(c for c in other.record.checks if c.metric == "traffic")
    assert memory.verdict == "regressed"
    before = BaselineDocument.from_json((tmp_path / "baselines" / "t" / "test_t.json").read_text())
    after = before.model_copy(
        update={
            "environment": before.environment.model_copy(update={"cpu_flags": "avx2 avx512f fma"})
        }
    )
    assert environment_changes(after, before) == ("cpu flags +avx512f",)


def test_a_rewrite_within_the_noise_keeps_the_file(
    tmp_path: Path, make_profile: MakeProfile
) -> None:
    profile = make_profile()
    path = tmp_path / "baselines" / "t" / "test_t.json"
    _run(tmp_path, profile, _counts(631_529), update=True)
    first = path.read_bytes()
    _run(tmp_path, profile, _counts(632_192), update=True)  # +0.1 %: the same model
    assert path.read_bytes() == first
    _run(tmp_path, profile, _counts(700_000), update=True)  # a real change is written
    assert json.loads(path.read_text())["metrics"]["instructions"] == 700_000


def test_a_baseline_without_instructions_keeps_its_keys(
    tmp_path: Path, make_profile: MakeProfile
) -> None:
    _run(tmp_path, make_profile(), None, update=True, limits="max_flops_delta=0.1")
    data = json.loads((tmp_path / "baselines" / "t" / "test_t.json").read_text())
    assert "cpu" not in data["environment"] and "cpu_flags" not in data["environment"]
    assert "instructions" not in data["metrics"]
    assert not any("instructions" in key for key in data["settings"])


def test_a_limit_without_a_measurement_is_unmeasured(
    tmp_path: Path, make_profile: MakeProfile
) -> None:
    outcome = _run(tmp_path, make_profile(), None)
    assert _row(outcome).verdict == "unmeasured"
