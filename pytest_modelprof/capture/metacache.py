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
There the results of views are answered too, as views of the same input's storage (which
input, and the offset, are stored). On meta, an output that shares a storage with an input
(``aten._unsafe_view``, whose schema does not say so) is never stored: a fresh tensor would
count as new memory.
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
    fake_view,
    new_fake_tensor,
    op_schema,
    storage_key,
)
from pytest_modelprof._tensors import flat_tensors

__all__ = ["lookup", "remember"]

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

#: One output: shape, strides, dtype, the device of a fake tensor (None on meta), and for a
#: view of an input (fake only) that input's index among the call's tensors and the offset.
_Spec = tuple[tuple[int, ...], tuple[int, ...], torch.dtype, Any, int, int]
_FRESH = -1  # the alias index of an output with a storage of its own
_SHARED = -2  # a storage several of the call's inputs have: not stored
# key -> (the op returned one tensor, not a tuple; its outputs)
_OUTS: dict[Hashable, tuple[bool, tuple[_Spec, ...]]] = {}
_KIND: dict[Any, int] = {}
_PURE, _VIEW = 1, 2  # every result new; results may alias an argument, none is written
_STATS = {"hits": 0, "misses": 0}


class _Uncacheable(Exception):
    """An argument that is not a plain meta tensor nor a hashable constant."""


def _kind(func: Any) -> int:
    """``_PURE``, ``_VIEW`` or 0 (an argument written, a result not a tensor)."""
    kind = _KIND.get(func)
    if kind is None:
        schema = op_schema(func)
        ok = (
            bool(schema.returns)
            and all(a.alias_info is None or not a.alias_info.is_write for a in schema.arguments)
            and all(str(r.type) == "Tensor" for r in schema.returns)
            and all(r.alias_info is None or not r.alias_info.is_write for r in schema.returns)
        )
        aliasing = any(a.alias_info is not None for a in (*schema.arguments, *schema.returns))
        kind = _KIND[func] = 0 if not ok else _VIEW if aliasing else _PURE
    return kind


def _ours(t: torch.Tensor, fake: Any) -> tuple[bool, Any]:
    """Whether the table may stand for ``t`` (a plain meta tensor, or one of ``fake``'s), and
    the device a fake tensor claims (None on meta)."""
    if fake is None:
        return type(t) in _PLAIN and t.is_meta, None
    parts = fake_parts(t)
    if parts is None or parts[0] is not fake:
        return False, None
    return True, parts[1]


def _key(value: Any, fake: Any, seen: list[torch.Tensor]) -> Hashable:
    """``value`` as a hashable key; ``fake``: the fake mode whose tensors stand for meta ones
    (None: meta tensors only). ``seen`` collects the tensors met, in order."""
    if isinstance(value, torch.Tensor):
        seen.append(value)
        ours, device = _ours(value, fake)
        if not ours:
            raise _Uncacheable  # a real tensor, a constant, another mode's fake tensor
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


def _spec(out: Any, fake: Any, inputs: list[torch.Tensor]) -> tuple[bool, tuple[_Spec, ...]] | None:
    """What to store for ``out``, or None when a tensor made from it would differ from it."""
    try:
        return _specs(out, fake, inputs)
    except (RuntimeError, NotImplementedError):  # no strides or storage (nested, opaque)
        return None


def _specs(
    out: Any, fake: Any, inputs: list[torch.Tensor]
) -> tuple[bool, tuple[_Spec, ...]] | None:
    single = isinstance(out, torch.Tensor)
    outs = (out,) if single else out
    if not isinstance(outs, tuple):
        return None
    sources: dict[int, int] = {}  # an input's storage -> its index; _SHARED: several inputs'
    for i, t in enumerate(inputs):
        key = storage_key(t.untyped_storage())
        sources[key] = _SHARED if key in sources else i
    specs: list[_Spec] = []
    storages: set[int] = set()
    for t in outs:
        spec = _output_spec(t, fake, inputs, sources)
        if spec is None:
            return None
        storage = storage_key(t.untyped_storage())
        if storage in storages:
            return None  # one storage shared between outputs
        storages.add(storage)
        specs.append(spec)
    return single, tuple(specs)


def _output_spec(
    t: Any, fake: Any, inputs: list[torch.Tensor], sources: dict[int, int]
) -> _Spec | None:
    """One output as stored, or None when a tensor made from the spec would differ from it."""
    ours, device = _ours(t, fake)
    if not ours:
        return None
    if t.layout is not torch.strided or any(t is i for i in inputs):
        return None  # an argument returned as it is: not a tensor made anew
    shape, stride, offset = tuple(t.shape), t.stride(), t.storage_offset()
    source = sources.get(storage_key(t.untyped_storage()), _FRESH)
    if source != _FRESH:
        if fake is None or source == _SHARED:  # on meta only new storages are answered
            return None  # (views are cheap there); which input a shared storage came from?
    else:
        extent = zip(shape, stride, strict=True)
        size = 0 if 0 in shape else 1 + sum((n - 1) * s for n, s in extent)
        if offset != 0 or t.untyped_storage().nbytes() != size * t.element_size():
            return None  # a larger storage than a fresh tensor's
    return shape, stride, t.dtype, device, source, offset


def _make(spec: _Spec, mode: Any, inputs: list[torch.Tensor]) -> torch.Tensor:
    shape, stride, dtype, device, source, offset = spec
    if mode is None:
        return torch.empty_strided(shape, stride, dtype=dtype, device=_META)
    if source == _FRESH:
        made: torch.Tensor = new_fake_tensor(mode, shape, stride, dtype, device)
        return made
    view: torch.Tensor = fake_view(mode, inputs[source], shape, stride, offset, dtype, device)
    return view


def lookup(
    func: Any, args: tuple[Any, ...], kwargs: dict[str, Any], *, fake: bool = False
) -> tuple[Hashable, Any]:
    """``(key, outputs)``: the outputs of a call seen before, else None; the key to
    :func:`remember` them under, None for a call the table does not hold (impure, not meta).
    ``fake``: the caller lets the table answer for a fake mode right below it too (views of
    an input included).

    The caller runs the kernel itself on a miss, so a kernel's error is raised from the
    caller's frame (``classify`` reads where an error came from)."""
    kind = _kind(func)
    if not kind:
        return None, None
    mode = None
    below = dispatch_modes_below()
    if below:
        mode = fake_mode_below() if fake and below == 1 else None
        if mode is None:
            return None, None
    elif kind != _PURE:
        return None, None
    seen: list[torch.Tensor] = []
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
    made = tuple(_make(spec, mode, seen) for spec in specs)
    return key, made[0] if single else made


def remember(key: Hashable, out: Any, inputs: Any) -> None:
    """Store the outputs' shapes under ``key`` (when a tensor made from them would equal
    them); ``inputs``: the call's ``(args, kwargs)``, whose storages an output may share."""
    fake = fake_mode_below() if isinstance(key, tuple) and key[-1] else None
    spec = _spec(out, fake, flat_tensors(inputs))
    if spec is None:
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
