"""A causal LM's KV cache: how its forward takes one, where it returns it, what it holds.

No cache class is assumed: the model creates its own cache on the prefill (``use_cache=True``,
as transformers' ``generate`` does) and gets it back on the decode step under the name its
forward declares (``cache`` in transformers >= 5.2x, ``past_key_values`` before, and in most
hand-written decoders). Its bytes are the storages behind the tensors reachable from the
returned object, each storage once: sliding windows, grouped or multi-query heads, compressed
latents and layers that share a cache come out as the model allocates them.
"""

from __future__ import annotations

import inspect
from collections.abc import Iterator
from typing import Any

import torch
from torch import nn

from pytest_modelprof._compat import storage_key
from pytest_modelprof.errors import ModelInputError

__all__ = ["cache_argument", "accepts", "returned_cache", "cache_bytes"]

#: The names a forward may take its cache under, preferred first.
CACHE_ARGS = ("cache", "past_key_values")


def _parameters(module: nn.Module) -> dict[str, inspect.Parameter]:
    try:
        return dict(inspect.signature(module.forward).parameters)
    except (TypeError, ValueError):  # a builtin or C-extension forward
        return {}


def accepts(module: nn.Module, name: str) -> bool:
    """Whether ``module.forward`` declares an argument ``name`` (not merely ``**kwargs``)."""
    return name in _parameters(module)


def cache_argument(module: nn.Module, label: str) -> str:
    """The name the forward takes its cache under; a clear error when it takes none."""
    params = _parameters(module)
    for name in CACHE_ARGS:
        if name in params:
            return name
    config = getattr(module, "config", None)
    if config is not None and getattr(config, "is_encoder_decoder", False):
        what = "it is an encoder-decoder; pass its decoder (a causal LM) instead"
    else:
        what = "profile a causal LM (a transformers ...ForCausalLM, hf:llama, hf:gpt2, ...)"
    raise ModelInputError(
        f"{label}: has no KV-cache support: {type(module).__name__}.forward takes neither "
        f"`cache` nor `past_key_values`, so a decode step cannot reuse the prompt's keys and "
        f"values. LLM serving costs need a decoder whose forward takes and returns its cache; "
        f"{what}."
    )


def returned_cache(output: Any, label: str, module: nn.Module) -> Any:
    """The cache a prefill returned: ``output.cache``/``.past_key_values``, or ``output[1]``."""
    for name in CACHE_ARGS:
        found = getattr(output, name, None)
        if found is None and isinstance(output, dict):
            found = output.get(name)
        if found is not None:
            return found
    if isinstance(output, (tuple, list)) and len(output) > 1 and _holds_tensors(output[1]):
        return output[1]
    raise ModelInputError(
        f"{label}: has no KV-cache support: {type(module).__name__}'s forward returned no "
        "cache after a prefill with use_cache=True (no `cache` or `past_key_values` in its "
        "output, nor a second element holding tensors). Return the cache it filled so that "
        "the next step can take it."
    )


def _holds_tensors(obj: Any) -> bool:
    return next(_tensors(obj, set()), None) is not None


def _tensors(obj: Any, seen: set[int]) -> Iterator[torch.Tensor]:
    """Every tensor reachable from ``obj`` through containers and object attributes."""
    if id(obj) in seen:
        return
    seen.add(id(obj))
    if isinstance(obj, torch.Tensor):
        yield obj
        return
    for child in _children(obj):
        yield from _tensors(child, seen)


def _children(obj: Any) -> list[Any]:
    """What a container or an object holds (its own dict is alive, so its id stays unique)."""
    if isinstance(obj, (list, tuple, set, frozenset)):
        return list(obj)
    if isinstance(obj, dict):
        return list(obj.values())
    if isinstance(obj, (nn.Module, str, bytes, int, float, bool)):
        return []  # a cache that points back at a layer holds no cache of that layer's weights
    attrs = getattr(obj, "__dict__", None)
    held: list[Any] = [attrs] if isinstance(attrs, dict) else []
    slots = getattr(type(obj), "__slots__", ())
    return held + [getattr(obj, s) for s in slots if hasattr(obj, s)]


def cache_bytes(cache: Any) -> int:
    """Bytes of the storages behind the tensors ``cache`` holds, each storage once (works on meta).

    The storage, not the tensor: a cache that keeps a view of part of a larger tensor keeps the
    whole of it alive (transformers' sliding-window layer keeps its last ``window - 1`` tokens as
    a view of the ``window`` tokens it attended). Zero-dimensional tensors (a layer's window
    size or position as a scalar) are bookkeeping, not keys or values, and are left out.
    """
    storages: dict[int, int] = {}
    for t in _tensors(cache, set()):
        if t.dim() > 0:
            storage = t.untyped_storage()
            storages[storage_key(storage)] = storage.nbytes()
    return sum(storages.values())
