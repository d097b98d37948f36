"""What a causal LM costs to serve: prefill, decode per token, KV cache, weights.

>>> from pytest_modelprof.llm import profile_llm
>>> costs = profile_llm("hf:llama", prompt=512, context=4096, num_hidden_layers=2)
>>> costs.kv_cache.bytes, costs.decode.flops_per_token

Importing this package imports nothing heavy: :class:`LLMCosts` is a plain pydantic document
(baselines keep it as the ``llm`` collector's evidence); :func:`profile_llm` imports torch.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pytest_modelprof.llm.costs import (
        Decode,
        KVCache,
        LLMCosts,
        Prefill,
        Roofline,
        Weights,
        format_llm,
    )
    from pytest_modelprof.llm.engine import profile_llm

__all__ = [
    "profile_llm",
    "LLMCosts",
    "Prefill",
    "Decode",
    "KVCache",
    "Weights",
    "Roofline",
    "format_llm",
]


def __getattr__(name: str) -> Any:
    # Lazy: the plugin reads the marker's llm= (llm.marker) at start-up without pydantic/torch.
    if name == "profile_llm":
        from pytest_modelprof.llm.engine import profile_llm

        return profile_llm
    if name in __all__:
        from pytest_modelprof.llm import costs

        return getattr(costs, name)
    raise AttributeError(name)
