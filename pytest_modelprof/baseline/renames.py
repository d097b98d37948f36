"""The quantity renames of 0.1.0 as data: one entry per renamed name, old -> new.

Baselines (schema 2 -> 3), results files (4 -> 5) and profiles (1 -> 2) written before the
renames are migrated on read by applying these tables where each document holds the names.
Standard library only.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

__all__ = [
    "GROWTH_ROW_RENAMES",
    "METRIC_RENAMES",
    "SETTING_RENAMES",
    "TIMING_VERDICTS",
    "TRAFFIC_FIELD",
    "renamed",
    "renamed_keys",
]

#: Metric names: the keys of ``metrics`` in baselines and results, and check rows' ``metric``.
METRIC_RENAMES: Final[Mapping[str, str]] = {
    "memory": "traffic",
    "peak_memory": "peak_activations",
    "arithmetic_intensity": "intensity",
    "latency_ms": "latency",
    "compile_s": "compile_time",
    "kv_cache_bytes": "kv_cache",
    "predicted_ms": "predicted_time",
    "decode_flops_growth_exponent": "decode_flops_growth",
}

#: Growth rows (``memory_growth[batch]``) were named by the swept profile field.
GROWTH_ROW_RENAMES: Final[Mapping[str, str]] = {
    "memory": "traffic",
    "peak_activation_bytes": "peak_activations",
    "latency_ms": "latency",
}

#: Limit and setting names: the keys of a baseline's ``settings``.
SETTING_RENAMES: Final[Mapping[str, str]] = {
    "max_memory": "max_traffic",
    "max_memory_delta": "max_traffic_delta",
    "max_peak_memory_delta": "max_peak_activations_delta",
    "max_ai_drop": "max_intensity_delta",
    "max_latency_ms": "max_latency",
    "max_kv_cache_bytes": "max_kv_cache",
    "max_kv_cache_bytes_delta": "max_kv_cache_delta",
    "max_predicted_ms": "max_predicted_time",
    "max_predicted_ms_delta": "max_predicted_time_delta",
    "max_decode_flops_growth_exponent": "max_decode_flops_growth",
    "max_flops_growth_exponent": "max_flops_growth",
    "max_memory_growth_exponent": "max_traffic_growth",
    "max_peak_memory_growth_exponent": "max_peak_activations_growth",
    "max_latency_growth_exponent": "max_latency_growth",
    "max_train_memory_growth_exponent": "max_train_memory_growth",
    "max_inference_memory_growth_exponent": "max_inference_memory_growth",
    # Settings that left the limit list under names of their own.
    "strict_ops": "fail_on_uncounted",
    "timing_strict": "timing_verdicts",
}

#: ``timing_strict``'s values as ``timing_verdicts`` says them.
TIMING_VERDICTS: Final[Mapping[str, str]] = {"true": "fail", "false": "warn"}

#: The bytes every op read and wrote, in a layer, an op family or an uncounted op.
TRAFFIC_FIELD: Final = ("memory", "traffic")


def renamed_keys(data: Any, renames: Mapping[str, str]) -> Any:
    """A mapping's keys renamed by ``renames`` (anything else is returned as it is)."""
    if not isinstance(data, Mapping):
        return data
    return {renames.get(k, k): v for k, v in data.items()}


def renamed(data: Any, old: str, new: str) -> Any:
    """A mapping with its key ``old`` called ``new``; each mapping of a list too."""
    if isinstance(data, list):
        return [renamed(item, old, new) for item in data]
    if not isinstance(data, Mapping) or old not in data:
        return data
    return {(new if k == old else k): v for k, v in data.items()}
