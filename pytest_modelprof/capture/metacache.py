"""Meta kernels run once per distinct call; later calls reuse the outputs' shapes.

On meta tensors an op's outputs depend only on its inputs' metadata (shape, strides, dtype) and
its other arguments, yet many meta kernels are Python decompositions (batch norm, layer norm)
costing 50-100 µs a call: most of a meta capture's time. A pure op (no argument or result that
aliases or is written) on plain meta tensors runs once per distinct signature; a later call
gets fresh empty meta tensors with the same shape, strides and dtype, so every count is the
same. The table lives for the process (what a meta kernel returns does not change between
captures), bounded. It is bypassed while another dispatch mode sits below the tracer, which
must still see every op.

A caller that runs on fake tensors (``fit/tracker.py``) may also let the table answer for the
fake mode below it: fake tensors without a constant are shapes on a device as meta tensors are,
and fake mode's own cache key costs about as much as the kernel it saves (tens of µs a call).
An output that shares a storage with an input (``aten._unsafe_view``, whose schema does not say
so) is never stored: a fresh tensor would count as new memory.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any

import torch
from torch import nn

from pytest_modelprof._compat import (
    dispatch_modes_below,
    fake_mode_below,
    fake_parts,
    new_fake_tensor,
    op_schema,
    storage_key,
)

__all__ = ["lookup", "remember", "cache_stats", "clear"]

_SCALARS = (
    type(None),
    bool,
    int,
    float,
    str,
    torch.dtype,
    torch.device,
    torch.layout,
    torch.memory_format,
)
_PLAIN = (torch.Tensor, nn.Parameter)  # no subclass: fake tensors, wrappers have own rules
_META = torch.device("meta")
_MAX = 16384  # entries; cleared when full (a few hundred per model architecture)

_Spec = tuple[tuple[int, ...], tuple[int, ...], torch.dtype, Any]
# key -> (the op returned one tensor, not a tuple; the outputs' shape, strides, dtype and
# device of a fake tensor, None on meta)
_OUTS: dict[Hashable, tuple[bool, tuple[_Spec, ...]]] = {}
_PURE: dict[Any, bool] = {}
_STATS = {"hits": 0, "misses": 0}


class _Uncacheable(Exception):
    """An argument that is not a plain meta tensor nor a hashable constant."""


def _pure(func: Any) -> bool:
    """No aliasing or written argument, and every result a new tensor."""
    pure = _PURE.get(func)
    if pure is None:
        schema = op_schema(func)
        pure = _PURE[func] = (
            bool(schema.returns)
            and all(a.alias_info is None for a in schema.arguments)
            and all(r.alias_info is None and str(r.type) == "Tensor" for r in schema.returns)
        )
    return pure


def _key(value: Any, fake: Any, seen: list[int]) -> Hashable:
    """``value`` as a hashable key; ``fake``: the fake mode whose tensors stand for meta ones
    (None: meta tensors only). ``seen`` counts the tensors met."""
    if isinstance(value, torch.Tensor):
        seen.append(1)
        device = None
        if fake is None:
            if type(value) not in _PLAIN or not value.is_meta:
                raise _Uncacheable
        else:
            parts = fake_parts(value)
            if parts is None or parts[0] is not fake:
                raise _Uncacheable  # a real tensor, a constant, another mode's fake tensor
            device = parts[1]
        if value.layout is not torch.strided:
            raise _Uncacheable  # sparse layouts keep more than shape and strides
        try:
            return (value.dtype, tuple(value.shape), value.stride(), value.storage_offset(), device)
        except (RuntimeError, NotImplementedError):  # nested tensors have no strides
            raise _Uncacheable from None
    if isinstance(value, (list, tuple)):
        return tuple(_key(v, fake, seen) for v in value)
    if isinstance(value, _SCALARS):
        return (type(value), value)  # True and 1 hash alike but promote differently
    raise _Uncacheable


def _spec(out: Any, fake: Any) -> tuple[bool, tuple[_Spec, ...]] | None:
    """What to store for ``out``, or None when a fresh empty tensor would differ from it."""
    try:
        return _specs(out, fake)
    except (RuntimeError, NotImplementedError):  # no strides or storage (nested, opaque)
        return None


def _specs(out: Any, fake: Any) -> tuple[bool, tuple[_Spec, ...]] | None:
    single = isinstance(out, torch.Tensor)
    outs = (out,) if single else out
    if not isinstance(outs, tuple):
        return None
    specs: list[_Spec] = []
    storages: set[int] = set()
    for t in outs:
        device = None
        if fake is None:
            if type(t) not in _PLAIN or not t.is_meta:
                return None
        else:
            parts = fake_parts(t)
            if parts is None or parts[0] is not fake:
                return None
            device = parts[1]
        if t.layout is not torch.strided or t.storage_offset() != 0:
            return None
        shape, stride = tuple(t.shape), t.stride()
        size = 0 if 0 in shape else 1 + sum((n - 1) * s for n, s in zip(shape, stride, strict=True))
        storage = t.untyped_storage()
        if storage.nbytes() != size * t.element_size() or storage_key(storage) in storages:
            return None  # a larger storage or one shared between outputs: not a fresh tensor
        storages.add(storage_key(storage))
        specs.append((shape, stride, t.dtype, device))
    return single, tuple(specs)


def _storages(value: Any, into: set[int]) -> set[int]:
    if isinstance(value, torch.Tensor):
        into.add(storage_key(value.untyped_storage()))
    elif isinstance(value, (list, tuple)):
        for v in value:
            _storages(v, into)
    elif isinstance(value, dict):
        _storages(list(value.values()), into)
    return into


def lookup(
    func: Any, args: tuple[Any, ...], kwargs: dict[str, Any], *, fake: bool = False
) -> tuple[Hashable, Any]:
    """``(key, outputs)``: the outputs of a call seen before, else None; the key to
    :func:`remember` them under, None for a call the table does not hold (impure, not meta).
    ``fake``: the caller lets the table answer for a fake mode right below it too.

    The caller runs the kernel itself on a miss, so a kernel's error is raised from the
    caller's frame (``classify`` reads where an error came from)."""
    if not _pure(func):
        return None, None
    mode = None
    below = dispatch_modes_below()
    if below:
        mode = fake_mode_below() if fake and below == 1 else None
        if mode is None:
            return None, None
    seen: list[int] = []
    try:
        # The default dtype is read by ops such as true division of integer tensors.
        key = (
            func,
            _key(args, mode, seen),
            _key(tuple(kwargs.items()), mode, seen),
            torch.get_default_dtype(),
            mode is not None,
        )
    except _Uncacheable:
        return None, None
    if mode is not None and not seen:  # a factory: its device comes from the mode's defaults
        return None, None
    hit = _OUTS.get(key)
    if hit is None:
        _STATS["misses"] += 1
        return key, None
    _STATS["hits"] += 1
    single, specs = hit
    if mode is None:
        made = tuple(
            torch.empty_strided(shape, stride, dtype=dtype, device=_META)
            for shape, stride, dtype, _ in specs
        )
    else:
        made = tuple(new_fake_tensor(mode, *spec) for spec in specs)
    return key, made[0] if single else made


def remember(key: Hashable, out: Any, inputs: Any) -> None:
    """Store the outputs' shapes under ``key`` (when a fresh empty tensor would equal them);
    ``inputs``: the call's arguments (an output sharing their storage is not fresh)."""
    fake = fake_mode_below() if isinstance(key, tuple) and key[-1] else None
    spec = _spec(out, fake)
    if spec is None:
        return
    outs = (out,) if spec[0] else out
    if _storages(list(outs), set()) & _storages(inputs, set()):
        return
    if len(_OUTS) >= _MAX:
        _OUTS.clear()
    _OUTS[key] = spec


def cache_stats() -> dict[str, int]:
    """Calls answered from the table (hits) and run (misses) so far in this process."""
    return dict(_STATS, entries=len(_OUTS))


def clear() -> None:
    """Forget every stored signature (the next capture runs every meta kernel again)."""
    _OUTS.clear()
