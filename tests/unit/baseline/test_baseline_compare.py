"""compare(current, baseline, policy): a verdict per metric, never an exception."""

from __future__ import annotations

from collections.abc import Callable

from pytest_modelprof.baseline.change import format_change
from pytest_modelprof.baseline.compare import Policy, compare, layer_growth
from pytest_modelprof.baseline.document import BaselineDocument
from pytest_modelprof.baseline.tolerance import Budget, Ignore, Relative
from pytest_modelprof.schema import LayerStats, ModelProfile

MakeProfile = Callable[..., ModelProfile]
MakeLayer = Callable[..., LayerStats]


def doc(profile: ModelProfile) -> BaselineDocument:
    return BaselineDocument.from_profile(profile, test="t.py::test_x", name=None, settings={})


def verdicts(comparison: object) -> dict[str, str]:
    return {c.metric: c.verdict for c in comparison.checks}


def test_identical_is_ok(make_profile: MakeProfile) -> None:
    d = doc(make_profile())
    result = compare(d, d, Policy())
    assert result.verdict == "ok"
    assert set(verdicts(result).values()) == {"ok"}
    assert result.layers == ()


def test_no_baseline_is_new(make_profile: MakeProfile) -> None:
    result = compare(doc(make_profile()), None, Policy())
    assert result.verdict == "new"
    assert verdicts(result)["flops"] == "new"


def test_growth_beyond_tolerance_regresses(make_profile: MakeProfile) -> None:
    # 1.0 MFLOPs -> 1.2 MFLOPs is +20 %, over a 10 % tolerance
    before, after = doc(make_profile(flops=1_000_000)), doc(make_profile(flops=1_200_000))
    policy = Policy(tolerances={"flops": Relative(0.1), "macs": Relative(0.5)})
    result = compare(after, before, policy)
    v = verdicts(result)
    assert v["flops"] == "regressed"
    assert v["macs"] == "ok"  # +20 % within 50 %
    (check,) = [c for c in result.regressions if c.metric == "flops"]
    assert check.change is not None and abs(check.change - 0.2) < 1e-12
    assert "1 MFLOPs \u2192 1.2 MFLOPs (+20.0 %, limit +10.0 %)" in check.describe()


def test_growth_within_tolerance_is_ok(make_profile: MakeProfile) -> None:
    before, after = doc(make_profile(flops=1_000_000)), doc(make_profile(flops=1_050_000))
    policy = Policy(
        tolerances={m: Relative(0.1) for m in ("flops", "macs", "intensity")}
    )
    assert verdicts(compare(after, before, policy))["flops"] == "ok"


def test_improvement_beyond_tolerance(make_profile: MakeProfile) -> None:
    before, after = doc(make_profile(flops=1_000_000)), doc(make_profile(flops=800_000))
    result = compare(after, before, Policy(tolerances={"intensity": Ignore()}))
    assert verdicts(result)["flops"] == "improved"
    assert result.verdict == "improved"


def test_ai_drop_is_worse_ai_rise_is_better(make_profile: MakeProfile) -> None:
    base = doc(make_profile(ai=10.0, memory=100_000))
    # The same FLOPs over more bytes: a real intensity drop (memory grew, so an input got worse).
    drop = compare(
        doc(make_profile(ai=8.0, memory=125_000)), base,
        Policy(tolerances={"intensity": Relative(0.1), "traffic": Ignore()}),
    )
    assert verdicts(drop)["intensity"] == "regressed"  # -20 % beyond -10 %
    assert "limit -10.0 %" in drop.regressions[0].describe()
    rise = compare(
        doc(make_profile(ai=12.0, memory=100_000)), base,
        Policy(tolerances={"intensity": Relative(0.1)}),
    )
    assert verdicts(rise)["intensity"] == "improved"


def test_ignore_never_judges(make_profile: MakeProfile) -> None:
    before, after = doc(make_profile(flops=1)), doc(make_profile(flops=10**9))
    policy = Policy(tolerances={m: Ignore() for m in ("flops", "macs", "intensity")})
    assert verdicts(compare(after, before, policy))["flops"] == "ok"


def test_zero_baseline(make_profile: MakeProfile) -> None:
    zero = doc(make_profile(params=0))
    assert verdicts(compare(zero, zero, Policy()))["params"] == "ok"
    result = compare(doc(make_profile(params=5)), zero, Policy())
    (check,) = [c for c in result.checks if c.metric == "params"]
    assert check.verdict == "regressed" and check.change == float("inf")
    assert "+inf %" in check.describe()


def test_budget_holds_without_baseline(make_profile: MakeProfile) -> None:
    result = compare(doc(make_profile(flops=10**10)), None, Policy(budgets={"flops": Budget(9e9)}))
    (check,) = result.regressions
    assert check.metric == "flops" and check.kind == "budget"
    assert "over budget max_flops=9 GFLOPs" in check.describe()


def test_budget_with_baseline_ok_under(make_profile: MakeProfile) -> None:
    d = doc(make_profile(flops=10**9))
    assert compare(d, d, Policy(budgets={"flops": Budget(9e9)})).verdict == "ok"


def test_limit_on_unmeasured_metric(make_profile: MakeProfile) -> None:
    d = doc(make_profile())
    result = compare(d, d, Policy(budgets={"latency": Budget(5)}))
    (check,) = result.unmeasured
    assert check.metric == "latency"
    assert result.verdict == "unmeasured"
    assert "does not measure it" in check.describe()
    # an explicit delta on an unmeasured metric is reported too ...
    explicit = Policy(tolerances={"subgraphs": Relative(0.1)}, explicit=frozenset({"subgraphs"}))
    assert [c.metric for c in compare(d, d, explicit).unmeasured] == ["subgraphs"]
    # ... but the built-in default (exact) on a metric nobody measures says nothing
    assert compare(d, d, Policy()).unmeasured == ()


def test_metric_missing_now(make_profile: MakeProfile) -> None:
    d = doc(make_profile())
    older = d.model_copy(update={"metrics": {**d.metrics, "latency": 3.0}})
    result = compare(d, older, Policy())
    assert verdicts(result)["latency"] == "missing"


def test_layer_growth_top5_by_growth(make_profile: MakeProfile, make_layer: MakeLayer) -> None:
    layer = make_layer
    before = doc(make_profile(layers=[layer(f"l{i}", 100) for i in range(8)]))
    # l0..l6 grow by 10..70 FLOPs, "new" appears with 1000, l7 shrinks
    after_layers = [layer(f"l{i}", 100 + 10 * (i + 1)) for i in range(7)]
    after_layers += [layer("l7", 50), layer("new", 1000, type="Linear")]
    after = doc(make_profile(flops=2_000_000, layers=after_layers))
    result = compare(after, before, Policy())
    assert result.layer_metric is not None and result.layer_metric.name == "flops"
    assert [d.name for d in result.layers] == ["new", "l6", "l5", "l4", "l3"]
    assert result.layers[0].baseline == 0 and result.layers[0].growth == 1000
    assert layer_growth(after, before, "flops", top=2)[1].growth == 70


def test_format_change() -> None:
    assert format_change(0.154) == "+15.4 %"
    assert format_change(-0.05) == "-5.0 %"
    assert format_change(float("inf")) == "+inf %"
    assert format_change(None) == "n/a"
