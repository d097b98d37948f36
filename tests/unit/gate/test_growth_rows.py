"""Growth-exponent rows: the limit is the limit (1.1 used to pass 1.15)."""

from __future__ import annotations

from pytest_modelprof.gate.judge import growth_checks
from pytest_modelprof.gate.limits import Limits


def _sweep(exponent: float) -> dict[str, object]:
    return {
        "series": [
            {
                "axis": "seq_len",
                "values": [128, 256, 512],
                "fits": {"flops": {"exponent": exponent}},
                "module_fits": {"attn": {"exponent": exponent + 0.3}, "mlp": {"exponent": 1.0}},
            }
        ]
    }


def test_an_exponent_just_over_the_limit_fails() -> None:
    limits = Limits().with_values({"max_flops_growth": 1.1}, "marker")
    (row,) = growth_checks(_sweep(1.15), limits)
    assert row.verdict == "regressed" and row.kind == "growth" and row.hard
    assert "grows as seq_len^1.15 over 128..512, above max_flops_growth=1.1" in row.reason
    assert "fastest-growing scope 'attn' (exponent 1.45)" in row.reason
    (ok,) = growth_checks(_sweep(1.1), limits)
    assert ok.verdict == "ok"


def test_a_latency_exponent_warns_unless_timing_verdicts_fail() -> None:
    sweep = _sweep(1.0)
    sweep["series"][0]["fits"]["latency_ms"] = {"exponent": 1.6}  # type: ignore[index]
    limits = Limits().with_values({"max_latency_growth": 1.2}, "marker")
    (row,) = growth_checks(sweep, limits)
    assert row.verdict == "warning"
    strict = limits.with_values({"timing_verdicts": "fail"}, "marker")
    assert growth_checks(sweep, strict)[0].verdict == "regressed"


def test_a_scope_is_named_only_for_the_metric_it_was_fitted_on() -> None:
    # module_fits come from per-module FLOPs: 'attn' is where FLOPs grow fastest, which says
    # nothing about memory or latency.
    sweep = _sweep(1.0)
    fits = sweep["series"][0]["fits"]  # type: ignore[index]
    fits["traffic"] = {"exponent": 1.6}
    fits["latency_ms"] = {"exponent": 1.6}
    limits = Limits().with_values(
        {
            "max_traffic_growth": 1.2,
            "max_latency_growth": 1.2,
            "max_flops_growth": 1.2,
        },
        "marker",
    )
    rows = {row.metric: row for row in growth_checks(sweep, limits)}
    for name in ("traffic_growth[seq_len]", "latency_growth[seq_len]"):
        assert "scope" not in rows[name].reason and rows[name].detail["scope"] is None
    flops = rows["flops_growth[seq_len]"]
    assert flops.detail["scope"] == "attn"
