"""The gate without pytest: missing -> update -> ok -> regress -> update, plus cache and records."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from pytest_modelprof.baseline.check import Check
from pytest_modelprof.errors import SettingsError
from pytest_modelprof.gate.cache import ProfileCache
from pytest_modelprof.gate.evaluate import Outcome, evaluate, update_command
from pytest_modelprof.gate.fixture import Modelprof, TestProfiles
from pytest_modelprof.gate.limits import Limits
from pytest_modelprof.gate.renames import inputs_identity, renamed
from pytest_modelprof.gate.request import ProfileRequest
from pytest_modelprof.gate.settings import SessionSettings
from pytest_modelprof.report.summary import problem_lines, summary_lines
from pytest_modelprof.results.record import ProfileResult, records_from_json, records_to_json
from pytest_modelprof.schema import LayerStats, ModelProfile, TensorSpec

MakeProfile = Callable[..., ModelProfile]
MakeLayer = Callable[..., LayerStats]
NODE = "tests/test_m.py::test_tiny[a/b]"


def run(
    profile: ModelProfile,
    tmp_path: Path,
    *,
    update: bool = False,
    strict: bool = False,
    limits: Limits | None = None,
    name: str | None = None,
) -> Outcome:
    settings = SessionSettings(baseline_dir=tmp_path / "baselines", update=update,
                               fail_on_improvement=strict)
    return evaluate(
        profile,
        nodeid=NODE,
        name=name,
        limits=limits or Limits(),
        session=settings,
        rootdir=tmp_path,
    )


def test_full_flow(tmp_path: Path, make_profile: MakeProfile, make_layer: MakeLayer) -> None:
    base = make_profile(flops=1_000_000)
    missing = run(base, tmp_path)
    assert missing.record.status == "missing" and missing.record.failed
    assert missing.failure is not None
    assert "no baseline at baselines/tests/test_m/test_tiny[a_b]-" in missing.failure
    assert (
        "pytest --modelprof-update-baselines 'tests/test_m.py::test_tiny[a/b]'" in missing.failure
    )
    assert not (tmp_path / "baselines").exists()  # a normal run never writes

    new = run(base, tmp_path, update=True)
    assert new.record.status == "new" and new.failure is None
    (path,) = (tmp_path / "baselines").rglob("*.json")
    first = path.read_bytes()

    again = run(base, tmp_path, update=True)
    assert again.record.status == "ok"
    assert path.read_bytes() == first  # byte-identical rewrite

    assert run(base, tmp_path).record.status == "ok"

    grown_layers = [make_layer("conv1", 750_000, params=1000), make_layer("fc", 250_000)]
    grown_layers.append(make_layer("head", 300_000, type="Linear"))
    grown = make_profile(flops=1_300_000, layers=grown_layers)
    regressed = run(grown, tmp_path, limits=Limits().with_values({"max_flops_delta": 0.1}, "m"))
    assert regressed.record.status == "regressed"
    failure = regressed.failure or ""
    assert "regressed against baselines/tests/test_m/" in failure
    assert "FLOPs: 1 MFLOPs \u2192 1.3 MFLOPs (+30.0 %, limit +10.0 %)" in failure
    assert "MACs: 500 KMACs \u2192 650 KMACs (+30.0 %, limit exact)" in failure
    assert "layers that grew most (FLOPs):" in failure
    assert "head (Linear): 0 FLOPs \u2192 300 KFLOPs (+300 KFLOPs)" in failure
    assert "If the change is intended, run: pytest --modelprof-update-baselines" in failure
    assert path.read_bytes() == first

    updated = run(grown, tmp_path, update=True)
    assert updated.record.status == "updated" and not updated.record.failed
    assert path.read_bytes() != first
    assert run(grown, tmp_path).record.status == "ok"


def test_improvement_passes_with_hint_or_fails_strict(
    tmp_path: Path, make_profile: MakeProfile
) -> None:
    run(make_profile(flops=1_000_000), tmp_path, update=True)
    better = make_profile(flops=500_000, ai=10.0, memory=50_000)
    lax = run(better, tmp_path)
    assert lax.record.status == "improved" and lax.failure is None
    assert lax.hint is not None and "Lock it in with" in lax.hint
    strict = run(better, tmp_path, strict=True)
    assert strict.record.status == "improved" and strict.record.failed
    assert strict.failure is not None and "fail_on_improvement" in strict.failure


def test_budget_fails_even_when_updating(tmp_path: Path, make_profile: MakeProfile) -> None:
    limits = Limits().with_values({"max_flops": "500K"}, "marker")
    out = run(make_profile(flops=1_000_000), tmp_path, update=True, limits=limits)
    assert out.record.failed and out.record.status == "new"
    assert "over budget max_flops=500 KFLOPs" in (out.failure or "")
    assert "updating the baseline cannot fix" in (out.failure or "")


def test_missing_baseline_also_lists_budget(tmp_path: Path, make_profile: MakeProfile) -> None:
    limits = Limits().with_values({"max_params": "10"}, "marker")
    out = run(make_profile(params=1000), tmp_path, limits=limits)
    assert out.record.status == "missing"
    assert "over budget max_params=10" in (out.failure or "")


def test_unmeasured_limit_fails(tmp_path: Path, make_profile: MakeProfile) -> None:
    run(make_profile(), tmp_path, update=True)
    limits = Limits().with_values({"max_latency": "5ms"}, "marker")
    out = run(make_profile(), tmp_path, limits=limits)
    assert out.record.status == "regressed"
    assert "latency: a limit is set (max_latency=5 ms) but this profile does not measure it" in (
        out.failure or ""
    )


def test_corrupt_and_newer_baselines(tmp_path: Path, make_profile: MakeProfile) -> None:
    run(make_profile(), tmp_path, update=True)
    (path,) = (tmp_path / "baselines").rglob("*.json")
    path.write_text("{oops")
    out = run(make_profile(), tmp_path)
    assert out.record.status == "error"
    assert "corrupt baseline" in (out.failure or "") and path.name in (out.failure or "")
    fixed = run(make_profile(), tmp_path, update=True)
    assert fixed.record.status == "updated" and not fixed.record.failed
    path.write_text(path.read_text().replace('"schema_version": 3', '"schema_version": 99'))
    newer = run(make_profile(), tmp_path)
    assert newer.record.status == "error" and "newer" in (newer.failure or "")


def test_named_profiles_get_their_own_files(tmp_path: Path, make_profile: MakeProfile) -> None:
    run(make_profile(), tmp_path, update=True, name="backbone")
    run(make_profile(), tmp_path, update=True, name="head")
    names = sorted(p.name for p in (tmp_path / "baselines").rglob("*.json"))
    assert len(names) == 2 and names[0].endswith("@backbone.json")


def test_records_round_trip() -> None:
    record = ProfileResult(
        nodeid="t::x",
        name="n",
        model="m",
        status="ok",
        baseline_path="t/x@n.json",
        metrics={"flops": 1.0},
    )
    assert records_from_json(records_to_json([record])) == [record]
    assert record.label == "t::x@n"


def _flops_row(current: str, delta: str = "\u2013") -> list[Check]:
    return [
        Check(
            metric="flops",
            label="FLOPs",
            kind="delta",
            verdict="ok",
            reason="",
            summary=True,
            current_text=current,
            delta_text=delta,
        )
    ]


def test_summary_puts_regressions_first() -> None:
    rows = [
        ProfileResult(
            nodeid="t::a",
            model="m",
            status="ok",
            baseline_path="a",
            metrics={"flops": 1e9},
            checks=_flops_row("1 GFLOPs"),
        ),
        ProfileResult(
            nodeid="t::b",
            model="m",
            status="regressed",
            baseline_path="b",
            metrics={"flops": 2e9},
            baseline_metrics={"flops": 1e9},
            failed=True,
            checks=_flops_row("2 GFLOPs", "+1 GFLOPs (+100.0 %)"),
        ),
        ProfileResult(
            nodeid="t::c",
            model="m",
            status="missing",
            baseline_path="c",
            metrics={"flops": 1e6},
            failed=True,
            checks=_flops_row("1 MFLOPs"),
        ),
    ]
    lines = summary_lines(rows)
    assert lines[0].split()[:3] == ["status", "test", "FLOPs"]
    assert [line.split()[0] for line in lines[1:]] == ["regressed", "missing", "ok"]
    assert "2 GFLOPs (+100.0 %)" in lines[1]


def test_another_environment_is_one_line_per_run_on_a_pass_too() -> None:
    # Two passing tests on another torch, one also on another torchvision.
    torch_change, vision_change = "torch 2.99.0 \u2192 2.14.1", "torchvision 0.99 \u2192 0.29.1"
    rows = [
        ProfileResult(
            nodeid="t::a", model="m", status="ok", baseline_path="a", environment=[torch_change]
        ),
        ProfileResult(
            nodeid="t::b",
            model="m",
            status="ok",
            baseline_path="b",
            environment=[torch_change, vision_change],
        ),
        ProfileResult(nodeid="t::c", model="m", status="ok", baseline_path="c"),
    ]
    (line,) = problem_lines(rows)
    assert line.startswith(
        f"note: 2 baselines recorded in another environment ({torch_change}; {vision_change}): "
        "kernel-dependent counts warn until you re-record"
    )
    assert problem_lines(rows[2:]) == []


def test_update_command_quotes() -> None:
    assert update_command(["t.py::x[a b]"]) == "pytest --modelprof-update-baselines 't.py::x[a b]'"


def test_cache_reuses_profiles(make_profile: MakeProfile) -> None:
    cache = ProfileCache()
    calls: list[ProfileRequest] = []

    def profile(req: ProfileRequest) -> ModelProfile:
        calls.append(req)
        return make_profile()

    a = cache.get_or_profile(ProfileRequest("resnet18", (1, 3, 64, 64)), profile)
    b = cache.get_or_profile(ProfileRequest("resnet18", (1, 3, 64, 64), name="other"), profile)
    assert a is b and len(calls) == 1 and cache.hits == 1
    cache.get_or_profile(ProfileRequest("resnet18", (1, 3, 32, 32)), profile)
    cache.get_or_profile(ProfileRequest("resnet18", (1, 3, 64, 64), device="meta"), profile)
    assert len(calls) == 3

    class Module:
        training = True

        def parameters(self) -> list[int]:
            return []

        def __repr__(self) -> str:
            return f"Module(width={self.width})"

        width = 1

    m = Module()
    cache.get_or_profile(ProfileRequest(m, (1, 8)), profile)
    cache.get_or_profile(ProfileRequest(m, (1, 8)), profile)
    assert len(calls) == 4
    m.width = 2  # the architecture changed: profile again
    cache.get_or_profile(ProfileRequest(m, (1, 8)), profile)
    assert len(calls) == 5
    cache.get_or_profile(ProfileRequest(Module(), (1, 8)), profile)
    assert len(calls) == 6


def test_fixture_registers_and_refuses_duplicate_names(make_profile: MakeProfile) -> None:
    profiles = TestProfiles()
    seen: list[ProfileRequest] = []

    def profile(req: ProfileRequest) -> ModelProfile:
        seen.append(req)
        return make_profile()

    fixture = Modelprof(profiles, profile, lambda: ((1, 3, 8, 8), "cpu", {}))
    result = fixture("resnet18")
    assert isinstance(result, ModelProfile)
    assert seen[0].input_shape == (1, 3, 8, 8) and seen[0].device == "cpu"  # marker defaults
    fixture("resnet18", input_shape=[2, 3, 8, 8], name="b")
    assert seen[1].input_shape == (2, 3, 8, 8)
    with pytest.raises(SettingsError, match="already profiled a model without name="):
        fixture("resnet18")
    with pytest.raises(SettingsError, match="name='b'"):
        fixture("x", name="b")
    assert len(seen) == 2  # refused before profiling
    assert [n for n, _, _ in profiles.entries] == [None, "b"]


def test_the_summary_table_fits_its_width_and_names_what_it_left_out() -> None:
    # Seen before: the table alone was 119-161 columns at COLUMNS=100.
    checks = [
        Check(
            metric=m,
            label=m,
            kind="delta",
            verdict="ok",
            reason="",
            summary=True,
            current_text="12.3 KFLOPs",
            delta_text="+1.1 KFLOPs (+10.0 %)" if m == "flops" else "\u2013",
        )
        for m in ("flops", "params", "memory", "peak", "ai", "subgraphs")
    ]
    rows = [
        ProfileResult(
            nodeid="tests/models/test_zoo.py::test_a_rather_long_test_name[resnet50]",
            model="m",
            status="regressed",
            baseline_path="a",
            checks=checks,
        ),
        ProfileResult(
            nodeid="tests/models/test_zoo.py::test_b",
            model="m",
            status="ok",
            baseline_path="b",
            checks=checks,
        ),
    ]
    for width in (100, 80, 60):
        lines = summary_lines(rows, width)
        assert max(len(line) for line in lines) <= width, lines
        assert "flops" in lines[0] and "12.3 KFLOPs (+10.0 %)" in lines[1]  # the change stays
        assert any(line.startswith("(left out to fit") for line in lines) or "ai" in lines[0]
        assert "test_b" in lines[2] and "::test_a_" in lines[1]  # test names survive the cut


def test_failed_limits_are_left_to_pytest_and_warnings_wrap() -> None:
    row = ProfileResult(
        nodeid="t::a",
        model="m",
        status="regressed",
        baseline_path="a",
        failed=True,
        failures=["FLOPs: 1 → 2 (+100.0 %, limit exact)"],
        warnings=["memory: " + "x " * 60],
    )
    lines = problem_lines([row], 80, failures=False)
    assert not any("FAIL" in line for line in lines)  # printed once, under FAILURES
    assert all(len(line) <= 80 for line in lines) and len(lines) > 2


def test_a_missing_baseline_and_a_stale_one_with_the_same_inputs_are_a_rename(
    make_profile: MakeProfile,
) -> None:
    inputs = [{"shape": [1, 3, 8, 8], "dtype": "float32", "name": None}]
    missing = ProfileResult(
        nodeid="t.py::test_new",
        model="Net",
        status="missing",
        baseline_path="t/test_new.json",
        profile=make_profile(inputs=[TensorSpec.model_validate(inputs[0])]),
    )
    stale = {
        "t/test_other.json": inputs_identity("Other", inputs),
        "t/test_old.json": inputs_identity("Net", inputs),
    }
    assert renamed([missing], stale) == [(missing, "t/test_old.json")]
    other = [{"shape": [1, 3, 9, 9], "dtype": "float32", "name": None}]
    assert renamed([missing], {"t/test_old.json": inputs_identity("Net", other)}) == []


def test_tests_that_meet_have_files_of_their_own(tmp_path: Path, make_profile: MakeProfile) -> None:
    from pytest_modelprof.baseline.store import BaselinePaths

    node, other = "tests/test_m.py::TestR::test_c", "tests/test_m/TestR.py::test_c"  # one path
    settings = SessionSettings(baseline_dir=tmp_path / "baselines", update=True)
    base = make_profile(flops=1_000_000)

    def judge(nodeid: str, paths: BaselinePaths, session: SessionSettings) -> Outcome:
        return evaluate(
            base,
            nodeid=nodeid,
            name=None,
            limits=Limits(),
            session=session,
            rootdir=tmp_path,
            paths=paths,
        )

    alone = BaselinePaths(settings.baseline_dir, [other])
    assert judge(other, alone, settings).record.status == "new"  # as an older version would
    (usual,) = (tmp_path / "baselines").rglob("*.json")
    written = usual.read_bytes()
    # node alone finds the other's file at its usual path: a check fails naming it ...
    check = SessionSettings(baseline_dir=tmp_path / "baselines")
    held = judge(node, BaselinePaths(settings.baseline_dir, [node]), check)
    assert held.record.status == "error" and held.failure is not None
    assert f"holds the baseline of {other}, another test whose path is this test's" in held.failure
    # ... and an update writes node's own file, leaving the other's as it was.
    assert judge(node, BaselinePaths(settings.baseline_dir, [node]), settings).failure is None
    assert usual.read_bytes() == written
    assert len(list((tmp_path / "baselines").rglob("*.json"))) == 2
    # Both collected: the other test has no file of its own yet, and says why.
    both = BaselinePaths(settings.baseline_dir, [node, other])
    missing = judge(other, both, check)
    assert missing.record.status == "missing" and missing.failure is not None
    assert f"(it holds this test's baseline) is also the path of {node}" in missing.failure
    assert judge(node, both, check).record.status == "ok"
