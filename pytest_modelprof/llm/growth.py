"""Decode costs over several contexts: a cache-reusing decoder grows at most linearly in L.

A decode step reads the cached keys once, so its FLOPs are ``fixed + per_token * L``: the
exponent of a log-log fit over the contexts stays at or below 1. A decoder that recomputes
its prefix (a cache ignored, an attention over all pairs of cached tokens) grows
quadratically, and the exponent says so.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

__all__ = ["decode_growth"]


def fit_exponent(sizes: Sequence[float], values: Sequence[float]) -> float:
    """Least-squares slope of ``log(values)`` against ``log(sizes)`` (values > 0)."""
    xs = [math.log(s) for s in sizes]
    ys = [math.log(v) for v in values]
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    spread = sum((x - mx) ** 2 for x in xs)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / spread


def decode_growth(model: Any, contexts: Sequence[int], **options: Any) -> dict[str, Any]:
    """:func:`~pytest_modelprof.llm.profile_llm` at each context: the longest one's costs (JSON),
    and the decode FLOPs per token and KV-cache bytes per context with their fitted exponents."""
    from pytest_modelprof.llm.engine import profile_llm

    runs = [profile_llm(model, context=c, **options) for c in contexts]
    flops = [r.decode.flops_per_token for r in runs]
    kv = [r.kv_cache.bytes for r in runs]
    out: dict[str, Any] = runs[-1].model_dump(mode="json")
    out["growth"] = {
        "contexts": list(contexts),
        "decode_flops": flops,
        "kv_cache": kv,
        "decode_flops_exponent": fit_exponent(contexts, flops),
        "kv_cache_exponent": fit_exponent(contexts, kv) if min(kv) > 0 else None,
    }
    return out
