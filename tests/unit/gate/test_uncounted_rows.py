"""The uncounted-ops row: calls and bytes per op against the baseline's, with figures."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from pytest_modelprof.baseline.check import Check
from pytest_modelprof.baseline.document import BaselineDocument
from pytest_modelprof.gate.collect import BUILTIN_COLLECTORS
from pytest_modelprof.gate.judge import Evidence, judge, uncounted_check
from pytest_modelprof.gate.limits import Limits
from pytest_modelprof.schema import Environment, ModelProfile, UncountedOp

MakeProfile = Callable[..., ModelProfile]
OP = "mylib.attn.default"


def doc(
    make_profile: MakeProfile, *ops: tuple[str, int, int], torch: str = "2.15.0"
) -> BaselineDocument:
    """A document whose uncounted ops are ``(op, calls, bytes)``."""
    profile = make_profile(
        uncounted_ops=[UncountedOp(op=o, count=c, traffic=b, modules=["attn"]) for o, c, b in ops],
        environment=Environment(
            torch_version=torch,
            python_version="3.11.0",
            platform="linux",
            device="cpu",
            dtype="float32",
        ),
    )
    return BaselineDocument.from_profile(profile, test="t.py::t", name=None, settings={})


def row(current: BaselineDocument, baseline: BaselineDocument | None, **kw: bool) -> Check:
    (check,) = uncounted_check(current, baseline, Limits(**kw))
    return check


def test_fifty_times_the_calls_regress_with_both_counts(make_profile: MakeProfile) -> None:
    before = doc(make_profile, (OP, 1, 128))
    after = doc(make_profile, (OP, 50, 6400))
    check = row(after, before)
    assert check.verdict == "regressed"
    # 50 calls of 128 B each: 6.4 KB.
    assert f"more calls: {OP} \u00d71 \u2192 \u00d750, 128 B \u2192 6.4 KB moved" in check.reason
    assert "pytest_modelprof_register_formulas" in check.reason


def test_more_bytes_at_the_same_calls_regress_and_warn_in_another_environment(
    make_profile: MakeProfile,
) -> None:
    before = doc(make_profile, (OP, 1, 128))
    wider = doc(make_profile, (OP, 1, 2048))
    same_env = row(wider, before)
    assert same_env.verdict == "regressed"
    assert f"more bytes: {OP} 128 B \u2192 2.05 KB moved (\u00d71)" in same_env.reason
    # Bytes depend on kernels: recorded on another torch, more bytes alone warn ...
    elsewhere = doc(make_profile, (OP, 1, 2048), torch="2.14.1")
    rows = judge(Evidence(elsewhere), before, Limits(), BUILTIN_COLLECTORS).checks
    (soft,) = [c for c in rows if c.kind == "uncounted"]
    assert soft.verdict == "warning" and "another environment" in soft.reason
    # ... unless --modelprof-fail-on-environment; more calls fail whatever the environment.
    rows = judge(
        Evidence(elsewhere), before, Limits(), BUILTIN_COLLECTORS, fail_on_environment=True
    ).checks
    assert [c.verdict for c in rows if c.kind == "uncounted"] == ["regressed"]
    more_calls = doc(make_profile, (OP, 2, 256), torch="2.14.1")
    rows = judge(Evidence(more_calls), before, Limits(), BUILTIN_COLLECTORS).checks
    assert [c.verdict for c in rows if c.kind == "uncounted"] == ["regressed"]


def test_no_baseline_or_an_old_one_says_new(make_profile: MakeProfile) -> None:
    current = doc(make_profile, (OP, 50, 6400))
    fresh = row(current, None)
    assert fresh.verdict == "new" and fresh.reason == f"{OP} \u00d750 (no baseline yet)"
    v1 = doc(make_profile).model_copy(update={"uncounted_ops": None})  # as migrated from v1
    old = row(current, v1)
    assert old.verdict == "new" and "the baseline did not record them" in old.reason


@pytest.mark.parametrize(
    ("now", "says"),
    [
        ((OP, 1, 64), f"less: {OP} \u00d71 \u2192 \u00d71, 128 B \u2192 64 B moved"),
        ((OP, 0, 0), f"now counted: {OP}"),
    ],
)
def test_less_hidden_cost_is_an_improvement(
    make_profile: MakeProfile, now: tuple[str, int, int], says: str
) -> None:
    before = doc(make_profile, (OP, 1, 128))
    current = doc(make_profile, *([now] if now[1] else []))
    check = row(current, before)
    assert check.verdict == "improved" and says in check.reason


def test_unchanged_and_bytes_unknown_to_the_baseline(make_profile: MakeProfile) -> None:
    before = doc(make_profile, (OP, 3, 128))
    assert row(doc(make_profile, (OP, 3, 128)), before).reason == f"unchanged: {OP} \u00d73"
    # A baseline written before bytes were recorded: calls are compared, bytes cannot be.
    no_bytes = before.model_copy(update={"uncounted_traffic": None})
    assert row(doc(make_profile, (OP, 3, 4096)), no_bytes).verdict == "ok"


def test_strict_names_the_hook_that_exists(make_profile: MakeProfile) -> None:
    check = row(doc(make_profile, (OP, 1, 128)), None, fail_on_uncounted=True)
    assert check.verdict == "regressed" and check.hard
    assert "pytest_modelprof_register_formulas(registry) hook in conftest.py" in check.reason


def test_the_baseline_file_keeps_bytes_only_when_an_op_is_uncounted(
    make_profile: MakeProfile,
) -> None:
    with_op = doc(make_profile, (OP, 2, 256))
    assert BaselineDocument.from_json(with_op.to_json()).uncounted_traffic == {OP: 256}
    assert "uncounted_traffic" not in doc(make_profile).to_json()  # older files stay identical


def test_the_row_figures_are_calls(make_profile: MakeProfile) -> None:
    check = row(doc(make_profile, (OP, 50, 6400)), doc(make_profile, (OP, 1, 128)))
    assert (check.baseline, check.current) == (1.0, 50.0)
    assert (check.baseline_text, check.current_text) == ("\u00d71 (1 op)", "\u00d750 (1 op)")
    assert check.delta_text == "+49 calls"
