"""The gate's ``llm`` collector: serving costs of the test's model, as baseline evidence."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pytest_modelprof.baseline.collector import EvidenceData, JsonCollector, Measure
from pytest_modelprof.baseline.llm_metrics import LLM
from pytest_modelprof.llm.growth import decode_growth
from pytest_modelprof.units import Number

__all__ = ["LLM_COLLECTOR"]


def measure(call: Measure) -> EvidenceData | None:
    """:func:`~pytest_modelprof.llm.profile_llm` with the marker's ``llm=`` (else its defaults).

    The evidence is the whole :class:`~pytest_modelprof.llm.LLMCosts` document; the metric
    values (``kv_cache``, ``decode_flops`` per token, ``prefill_flops``) are read from it.
    A context list (``llm={"context": [1024, 4096]}``) measures each context: the costs are the
    longest one's, plus ``growth`` (see :func:`~pytest_modelprof.llm.growth.decode_growth`).
    """
    from pytest_modelprof.llm.engine import profile_llm

    request = call.request
    options: dict[str, Any] = dict(request.llm or ())
    context = options.get("context")
    if isinstance(context, tuple):  # a context sweep: the growth exponent of decode FLOPs
        options.pop("context")
        return decode_growth(request.model, context, dtype=request.dtype, **options)
    costs = profile_llm(request.model, dtype=request.dtype, **options)
    evidence: dict[str, Any] = costs.model_dump(mode="json")
    return evidence


def _llm_values(evidence: EvidenceData) -> dict[str, Number]:
    """The LLM metrics of the evidence (an ``LLMCosts`` document as JSON)."""
    out: dict[str, Number] = {
        "kv_cache": evidence["kv_cache"]["bytes"],
        "decode_flops": evidence["decode"]["flops_per_token"],
        "prefill_flops": evidence["prefill"]["flops"],
    }
    growth = evidence.get("growth")  # only from a context sweep, llm={"context": [...]}
    if isinstance(growth, Mapping):
        out["decode_flops_growth"] = growth["decode_flops_exponent"]
    return out


#: LLM serving costs: a prefill and one decode step on meta (marker ``llm={...}``).
LLM_COLLECTOR = JsonCollector(
    LLM,
    measure_with=measure,
    when=lambda call: bool(call.limited) or call.request.llm is not None,
    values_of=_llm_values,
    needs=(
        "a causal LM whose forward takes and returns its KV cache (the growth exponent: "
        "a context sweep, llm={'context': [1024, 4096, 16384]})"
    ),
)
