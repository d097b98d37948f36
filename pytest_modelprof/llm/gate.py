"""The gate's ``llm`` collector: serving costs of the test's model, as baseline evidence."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pytest_modelprof.baseline.collector import EvidenceData, Measure

__all__ = ["measure"]


def measure(call: Measure) -> EvidenceData | None:
    """:func:`~pytest_modelprof.llm.profile_llm` with the marker's ``llm=`` (else its defaults).

    The evidence is the whole :class:`~pytest_modelprof.llm.LLMCosts` document; the metric
    values (``kv_cache``, ``decode_flops`` per token, ``prefill_flops``) are read from it.
    A context list (``llm={"context": [1024, 4096]}``) measures each context: the costs are the
    longest one's, plus ``growth`` (see :func:`~pytest_modelprof.llm.growth.decode_growth`).
    """
    from pytest_modelprof.llm.engine import profile_llm

    request = call.request
    options: dict[str, Any] = dict(getattr(request, "llm", None) or ())
    context = options.get("context")
    if isinstance(context, tuple):  # a context sweep: the growth exponent of decode FLOPs
        from pytest_modelprof.llm.growth import decode_growth

        options.pop("context")
        return decode_growth(request.model, context, dtype=request.dtype, **options)
    costs = profile_llm(request.model, dtype=request.dtype, **options)
    evidence: dict[str, Any] = costs.model_dump(mode="json")
    return evidence
