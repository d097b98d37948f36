"""One word per quantity: the metric names, the limit names a user types, and time budgets
with their unit in the value."""

from __future__ import annotations

import pytest

from pytest_modelprof.baseline.metrics import BUILTIN_METRICS
from pytest_modelprof.baseline.tolerance import Budget, Ignore, Relative
from pytest_modelprof.errors import SettingsError
from pytest_modelprof.gate.limits import Limits
from pytest_modelprof.gate.marker import resolve_marker

OLD_LIMITS = (
    "max_memory",
    "max_memory_delta",
    "max_peak_memory_delta",
    "max_ai_drop",
    "max_latency_ms",
    "max_kv_cache_bytes",
    "max_kv_cache_bytes_delta",
    "max_predicted_ms",
    "max_predicted_ms_delta",
    "max_flops_growth_exponent",
    "max_decode_flops_growth_exponent",
)


def test_every_quantity_has_its_one_word() -> None:
    names = {m.name for m in BUILTIN_METRICS}
    assert {
        "traffic",
        "peak_activations",
        "intensity",
        "latency",
        "compile_time",
        "kv_cache",
        "predicted_time",
        "decode_flops_growth",
    } <= names
    # "memory" alone names no quantity: only a step's peak footprint carries the word.
    assert all(n.startswith(("train_memory", "inference_memory")) for n in names if "memory" in n)
    keys = {k for m in BUILTIN_METRICS for k in (m.delta_key, m.budget_key, m.growth_key) if k}
    assert not keys & set(OLD_LIMITS)
    assert all(k == f"max_{m.name}_delta" for m in BUILTIN_METRICS for k in [m.delta_key])
    assert all(m.budget_key in (None, f"max_{m.name}") for m in BUILTIN_METRICS)
    assert all(m.growth_key in (None, f"max_{m.name}_growth") for m in BUILTIN_METRICS)


def test_marker_takes_the_new_limit_names() -> None:
    spec = resolve_marker(
        (),
        {
            "max_traffic": "120MB",
            "max_traffic_delta": "5%",
            "max_latency": "12ms",
            "max_kv_cache": "1GB",
            "max_predicted_time": "0.5s",
            "max_intensity_delta": 0.5,
            "max_peak_activations_delta": "ignore",
            "max_compile_time_delta": 0.5,
        },
        Limits(),
        where="marker on t",
    )
    assert spec.limits.budgets == {
        "traffic": Budget(120e6),
        "latency": Budget(12.0),
        "kv_cache": Budget(1e9),
        "predicted_time": Budget(500.0),
    }
    assert spec.limits.tolerances == {
        "traffic": Relative(0.05),
        "intensity": Relative(0.5),
        "peak_activations": Ignore(),
        "compile_time": Relative(0.5),
    }


@pytest.mark.parametrize("old", OLD_LIMITS)
def test_old_limit_names_are_refused(old: str) -> None:
    with pytest.raises(SettingsError, match=old):
        resolve_marker((), {"model": "m", old: 1}, Limits(), where="marker on t")


@pytest.mark.parametrize(
    ("key", "raw", "hint"),
    [
        ("max_latency", 12, "'12ms'"),
        ("max_latency", "12", "'12ms'"),
        ("max_predicted_time", 2.5, "'2.5ms'"),
    ],
)
def test_a_time_budget_without_a_unit_is_refused(key: str, raw: object, hint: str) -> None:
    with pytest.raises(SettingsError, match=f"did you mean {hint}") as caught:
        resolve_marker((), {key: raw}, Limits(), where="t")
    assert str(caught.value).startswith(f"marker on t: bad value for {key}=")


def test_time_budgets_read_their_unit() -> None:
    limits = Limits().with_values({"max_latency": "0.5s", "max_predicted_time": "250us"}, "x")
    assert limits.budgets == {"latency": Budget(500.0), "predicted_time": Budget(0.25)}
