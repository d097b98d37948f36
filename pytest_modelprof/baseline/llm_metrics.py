"""The LLM serving metrics: the KV cache (bytes), decode FLOPs per token, prefill FLOPs, and the
growth of decode FLOPs over a context sweep.

One collector (:data:`LLM`) runs a prefill and one decode step on meta when the marker has
``llm={...}`` or one of these limits is set. The counts are exact in the worse direction by
default, like every counted number.

Standard library only: the measurement is its owner's, registered under the collector key.
"""

from __future__ import annotations

from typing import Final

from pytest_modelprof.baseline.metric import Metric
from pytest_modelprof.baseline.tolerance import Exact, Ignore
from pytest_modelprof.units import format_bytes, format_count, parse_bytes

__all__ = ["LLM", "LLM_METRICS"]


#: The key of the collector of these metrics, LLM serving costs: a prefill and one decode step
#: on meta (marker ``llm={...}``), registered by its owner (llm/gate.py).
LLM: Final = "llm"


#: KV cache, decode and prefill, in the order the rows list them.
LLM_METRICS: tuple[Metric, ...] = (
    Metric(
        name="kv_cache",
        integer=True,
        label="KV cache",
        direction="lower",
        delta_key="max_kv_cache_delta",
        default_delta=Exact(),
        formatter=format_bytes,
        budget_key="max_kv_cache",
        budget_parser=parse_bytes,
        summary=False,
        collector=LLM,
    ),
    Metric(
        name="decode_flops",
        integer=True,
        label="decode FLOPs/token",
        direction="lower",
        delta_key="max_decode_flops_delta",
        default_delta=Exact(),
        formatter=lambda v: format_count(v, "FLOPs"),
        budget_key="max_decode_flops",
        summary=False,
        collector=LLM,
    ),
    # Fitted over llm={"context": [...]}: at most 1 for a decoder that reuses its cache.
    Metric(
        name="decode_flops_growth",
        label="decode FLOPs growth",
        direction="lower",
        delta_key="max_decode_flops_growth_delta",
        default_delta=Ignore(),
        formatter=lambda v: f"{v:.3g}",
        budget_key="max_decode_flops_growth",
        budget_parser=float,
        summary=False,
        collector=LLM,
    ),
    Metric(
        name="prefill_flops",
        integer=True,
        label="prefill FLOPs",
        direction="lower",
        delta_key="max_prefill_flops_delta",
        default_delta=Exact(),
        formatter=lambda v: format_count(v, "FLOPs"),
        summary=False,
        collector=LLM,
    ),
)
