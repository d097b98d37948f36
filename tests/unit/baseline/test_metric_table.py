"""The metric table: names, directions, limits and getters."""

from __future__ import annotations

from collections.abc import Callable

from pytest_modelprof.baseline.metrics import BUILTIN_METRICS, metric_values
from pytest_modelprof.baseline.tolerance import Ignore
from pytest_modelprof.schema import ModelProfile

# The built-in table, as constants are: no session adds to it.
METRICS = BUILTIN_METRICS
METRICS_BY_NAME = {m.name: m for m in BUILTIN_METRICS}
LIMIT_KEYS = BUILTIN_METRICS.limit_keys()

MakeProfile = Callable[..., ModelProfile]


def test_limit_names_are_the_documented_ones() -> None:
    assert set(LIMIT_KEYS) == {
        "max_flops_delta",
        "max_macs_delta",
        "max_params_delta",
        "max_traffic_delta",
        "max_peak_activations_delta",
        "max_intensity_delta",
        "max_subgraphs_delta",
        "max_stages_delta",
        "max_latency_delta",
        "max_flops",
        "max_params",
        "max_traffic",
        "max_latency",
        # compile health
        "max_graphs_delta",
        "max_graph_breaks_delta",
        "max_graph_breaks",
        "max_recompiles_delta",
        "max_recompiles",
        "max_kernels_delta",
        "max_compile_time_delta",
        # LLM serving costs (the marker's llm=)
        "max_kv_cache_delta",
        "max_kv_cache",
        "max_decode_flops_delta",
        "max_decode_flops",
        "max_prefill_flops_delta",
        "max_decode_flops_growth_delta",
        "max_decode_flops_growth",
        # predicted GPU time (pytest_modelprof.predict)
        "max_predicted_time_delta",
        "max_predicted_time",
        # will it fit? (pytest_modelprof.fit): totals with budgets, components with deltas
        "max_train_memory",
        "max_train_memory_delta",
        "max_inference_memory",
        "max_inference_memory_delta",
        *(
            f"max_train_memory_{part}_delta"
            for part in ("parameters", "gradients", "optimizer_state", "activations", "transient")
        ),
        *(
            f"max_inference_memory_{part}_delta"
            for part in ("parameters", "activations", "transient")
        ),
        # CPU instructions under callgrind
        "max_instructions_delta",
        "max_instructions",
    }
    assert len({m.name for m in METRICS}) == len(METRICS)


def test_directions() -> None:
    assert METRICS_BY_NAME["flops"].direction == "lower"
    assert METRICS_BY_NAME["intensity"].direction == "higher"


def test_worse_by_follows_direction_and_handles_zero() -> None:
    flops, ai = METRICS_BY_NAME["flops"], METRICS_BY_NAME["intensity"]
    assert flops.worse_by(110, 100) == 0.1  # FLOPs up 10 % is 10 % worse
    assert ai.worse_by(90, 100) == 0.1  # AI down 10 % is 10 % worse
    assert ai.worse_by(110, 100) == -0.1
    assert flops.worse_by(0, 0) == 0.0
    assert flops.worse_by(5, 0) == float("inf")
    assert flops.worse_by(0, 5) == -1.0


def test_metric_values_leaves_out_unmeasured(make_profile: MakeProfile) -> None:
    values = metric_values(make_profile(flops=2_000, params=10, memory=100, peak=40))
    assert values == {
        "flops": 2_000,
        "macs": 1_000,
        "params": 10,
        "traffic": 100,
        "peak_activations": 40,
        "intensity": 20.0,  # 2000 FLOPs / 100 B
    }
    assert "subgraphs" not in values and "latency" not in values


def test_latency_is_ignored_by_default_and_formats() -> None:
    latency = METRICS_BY_NAME["latency"]
    assert latency.default_delta == Ignore()
    assert latency.format(1.5) == "1.5 ms"
    assert latency.format(None) == "n/a"
    assert METRICS_BY_NAME["traffic"].format(120e6) == "120 MB"
