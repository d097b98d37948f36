"""A stand-in copy of a module tree: the same modules, classes and hooks, other tensors.

The capture never runs the user's module itself. It runs a structural copy: every module object
is copied (its own ``__dict__``, parameter, buffer, submodule and hook containers), the
Python state it holds is copied by value (dicts, lists, sets, deques and tuples, nested, and
plain objects with a ``__dict__``, such as a rotary-cache helper), and every tensor is
replaced by a stand-in made for the capture mode: a meta tensor, a fake tensor, or a real
clone. A forward that caches into a dict or appends to a list writes into the copy's. Sharing
is kept: a module registered at two paths (timm's
``coat_tiny``), tied parameters and shared buffers map to one stand-in each. Whatever the
forward does — in-place updates of running statistics, ``setattr`` in a pre-hook (weight norm),
lazy initialisation, ``.grad`` from a backward pass — happens to the copy; the user's module
keeps the very same tensor objects, values, version counters, flags and hooks, also when the
capture fails. ``torch.func.functional_call`` swaps tensors in place and restores them
afterwards, which loses the user's weights when a module sits at two paths.
"""

from __future__ import annotations

import collections
import contextlib
import copy as _copy
import sys
import types
import weakref
from collections.abc import Callable, Iterator
from functools import cache
from typing import Any

import torch
from torch import nn
from torch.nn.modules.lazy import LazyModuleMixin
from torch.utils.hooks import RemovableHandle

from pytest_modelprof._compat import module_registries, registries_state, without_fake_mode
from pytest_modelprof.errors import UsageError

__all__ = ["standin_copy", "fake_lazy_layers"]

StandinFactory = Callable[[torch.Tensor], torch.Tensor]
"""Makes the stand-in for one tensor (a parameter is wrapped as a parameter afterwards)."""


# The tree itself, rebuilt with stand-ins; and attribute types that hold no tensor or module.
_TREE = frozenset({"_parameters", "_buffers", "_modules", "training"})
_PLAIN = frozenset(
    {bool, int, float, str, bytes, type(None), torch.dtype, torch.device, torch.Size}
)
# Mutable containers copied element by element (subclasses too: OrderedDict, defaultdict).
_CONTAINERS = (dict, list, set, collections.deque)
# Objects with a ``__dict__`` that are code or types, not state: shared, never copied.
_SHARED = (
    types.FunctionType,
    types.BuiltinFunctionType,
    types.MethodType,
    types.ModuleType,
    type,
    RemovableHandle,
)
_META = torch.device("meta")
# Beyond this nesting depth Python state is shared (a guard against very deep object graphs).
_MAX_DEPTH = 16


@cache
def _module_containers() -> frozenset[str]:
    """The hook dicts and sets ``nn.Module.__init__`` creates (names differ between versions)."""
    fresh = vars(nn.Module()).items()
    return frozenset(k for k, v in fresh if isinstance(v, (dict, set)) and k not in _TREE)


def standin_copy(module: nn.Module, make: StandinFactory) -> nn.Module:
    """A copy of ``module``'s tree whose tensors are ``make(tensor)``; ``module`` is not touched.

    Tensor attributes that are neither parameters nor buffers (weight norm's computed
    ``weight``, cached masks) get stand-ins too; methods bound to a copied module are rebound
    to its copy. The user's containers (dicts, lists, sets, deques, tuples, plain objects) are
    copied by value, with stand-ins for the tensors and copies for the modules inside them.
    """
    if isinstance(module, torch.jit.ScriptModule):
        raise UsageError("a TorchScript module cannot be copied structurally")
    copier = _Copier(make)
    root = copier.module(module)
    copier.fix_bindings()
    return root


class _Copier:
    """One structural copy in progress: what was copied so far, so sharing is kept."""

    def __init__(self, make: StandinFactory) -> None:
        self.make = make
        # id(original) -> (original, copy): the original is held, so its id cannot be reused.
        self.copies: dict[int, tuple[nn.Module, nn.Module]] = {}
        self.tensors: dict[int, torch.Tensor] = {}
        self.dicts: dict[int, tuple[Any, Any]] = {}
        self.values: dict[int, tuple[Any, Any]] = {}  # the user's containers and objects
        self.fixups: list[tuple[dict[str, Any], str, Any]] = []  # bound methods, hook handles
        self.containers = _module_containers()
        self.skip = self.containers | _TREE

    def tensor(self, t: torch.Tensor) -> torch.Tensor:
        done = self.tensors.get(id(t))
        if done is None:
            done = self.tensors[id(t)] = self.make(t)
        return done

    def module(self, m: nn.Module) -> nn.Module:
        done = self.copies.get(id(m))
        if done is not None:
            return done[1]
        new: nn.Module = object.__new__(type(m))
        self.copies[id(m)] = (m, new)
        own = vars(new)
        state = self._attributes(m, own)
        parameters, buffers, modules = module_registries(m)
        state |= registries_state(
            {k: None if p is None else self.tensor(p) for k, p in parameters.items()},
            {k: None if b is None else self.tensor(b) for k, b in buffers.items()},
            {k: None if s is None else self.module(s) for k, s in modules.items()},
        )
        own.update(state)
        return new

    def _attributes(self, m: nn.Module, own: dict[str, Any]) -> dict[str, Any]:
        """``m``'s ``__dict__`` with fresh hook containers and copied attributes."""
        state = dict(vars(m))
        for key in self.containers.intersection(state):
            original = state[key]
            # Hook dicts and the non-persistent set; most are empty, and an empty one is
            # much cheaper to make than to copy (OrderedDict.copy iterates in Python).
            duplicate = original.copy() if original else type(original)()
            state[key] = duplicate
            self.dicts[id(original)] = (original, duplicate)
        for key in state.keys() - self.skip:
            value = state[key]
            kind = type(value)
            if kind in _PLAIN:
                continue
            if isinstance(value, torch.Tensor):
                state[key] = self.tensor(value)
            elif kind is types.MethodType or kind is RemovableHandle:
                self.fixups.append((own, key, value))
            else:
                state[key] = self.python(value, 0)
        return state

    def python(self, value: Any, depth: int) -> Any:
        """Python state by value: a write into the copy's must not reach the user's."""
        if type(value) in _PLAIN:
            return value
        if isinstance(value, torch.Tensor):
            return self.tensor(value)
        if isinstance(value, nn.Module):
            return self.module(value)
        done = self.values.get(id(value))
        if done is not None:
            return done[1]
        if depth > _MAX_DEPTH or isinstance(value, _SHARED):
            return value
        if isinstance(value, tuple):
            return self._tuple(value, depth)
        if isinstance(value, _CONTAINERS):
            return self._container(value, depth)
        return self._object(value, depth)

    def _tuple(self, value: tuple[Any, ...], depth: int) -> Any:
        items = [self.python(v, depth + 1) for v in value]
        if all(a is b for a, b in zip(items, value, strict=True)):
            return value
        kind = type(value)
        try:
            new = kind(*items) if hasattr(value, "_fields") else kind(items)
        except Exception:  # a tuple subclass built some other way: shared, as before
            return value
        self.values[id(value)] = (value, new)
        return new

    def _container(self, value: Any, depth: int) -> Any:
        # copy.copy keeps the type and its settings (defaultdict's factory, deque's maxlen).
        try:
            new: Any = _copy.copy(value)
        except Exception:  # a container subclass that refuses to be copied: shared
            return value
        self.values[id(value)] = (value, new)  # before the elements: it may hold itself
        if isinstance(value, dict):
            for k, v in value.items():
                new[k] = self.python(v, depth + 1)
            return new
        elements = [self.python(v, depth + 1) for v in value]
        new.clear()
        (new.update if isinstance(new, set) else new.extend)(elements)
        return new

    def _object(self, value: Any, depth: int) -> Any:
        if not hasattr(value, "__dict__") or _library_object(type(value)):
            # No Python-level state to copy (C objects, numpy arrays); or the standard
            # library's threads, loggers and queues, torch's own objects (an fx Graph): shared.
            return value
        try:
            new = _copy.copy(value)
        except Exception:  # an object that refuses to be copied is shared, as before
            return value
        if new is value or not isinstance(getattr(new, "__dict__", None), dict):
            return value  # a singleton (an enum member) or a class that copies to itself
        self.values[id(value)] = (value, new)
        attrs = vars(new)
        for k, v in list(attrs.items()):
            attrs[k] = self.python(v, depth + 1)
        return new

    def fix_bindings(self) -> None:
        """Rebind bound methods and hook handles to the copies of their modules and dicts."""
        for state, key, value in self.fixups:
            if isinstance(value, RemovableHandle):
                state[key] = _rebind_handle(value, self.dicts)
                continue
            pair = self.copies.get(id(value.__self__))
            if pair is not None and pair[0] is value.__self__:
                state[key] = types.MethodType(value.__func__, pair[1])


def _library_object(kind: type) -> bool:
    """An object of the standard library or of torch: not the model's own Python state."""
    top = kind.__module__.partition(".")[0]
    return top == "torch" or top in sys.stdlib_module_names


def _rebind_handle(handle: RemovableHandle, dicts: dict[int, tuple[Any, Any]]) -> RemovableHandle:
    """A handle that removes the hook from the copy's hook dicts, not the original's.

    Lazy modules keep the handle of their initialisation hook and remove it after the first
    forward; the original's handle would delete the hook from the user's module.
    """

    def swap(ref: Any) -> Any:
        target = ref()
        pair = dicts.get(id(target)) if target is not None else None
        return weakref.ref(pair[1]) if pair is not None and pair[0] is target else ref

    new: RemovableHandle = object.__new__(RemovableHandle)
    vars(new).update(vars(handle))
    new.hooks_dict_ref = swap(handle.hooks_dict_ref)
    new.extra_dict_ref = tuple(swap(ref) for ref in handle.extra_dict_ref)
    return new


# -- stand-in factories, one per capture mode ---------------------------------------------------


def _target_dtype(t: torch.Tensor, dtype: torch.dtype | None) -> torch.dtype:
    return dtype if dtype is not None and t.is_floating_point() else t.dtype


def _like(t: torch.Tensor, out: torch.Tensor) -> torch.Tensor:
    """``out`` as a parameter if ``t`` is one, with ``t``'s ``requires_grad``."""
    kind = type(t)
    if kind is nn.Parameter or (kind is not torch.Tensor and isinstance(t, nn.Parameter)):
        return nn.Parameter(out, requires_grad=t.requires_grad)
    return out.requires_grad_() if t.requires_grad else out


def _uninitialized(t: torch.Tensor, device: torch.device) -> torch.Tensor | None:
    """A fresh lazy parameter/buffer (LazyLinear before its first call), or None."""
    kind = type(t)
    if kind is torch.Tensor or kind is nn.Parameter:
        return None  # the common case, without Parameter's Python-level isinstance
    if isinstance(t, nn.parameter.UninitializedParameter):
        lazy: torch.Tensor = nn.parameter.UninitializedParameter(
            requires_grad=t.requires_grad,
            device=device,  # type: ignore[call-arg]
        )
        return lazy
    if isinstance(t, nn.parameter.UninitializedBuffer):
        buffer: torch.Tensor = nn.parameter.UninitializedBuffer(
            requires_grad=t.requires_grad,
            device=device,  # type: ignore[call-arg]
        )
        return buffer
    return None


def empty_standins(
    device: torch.device, dtype: torch.dtype | None, fake: Any = None
) -> StandinFactory:
    """Data-less stand-ins on ``device``: meta tensors, or fake ones made in the mode ``fake``.

    Lazy (uninitialised) parameters stay uninitialised: they cannot wrap a fake tensor (with
    ``fake`` they are on meta, and :func:`fake_lazy_layers` makes them fake once they have
    their shapes).
    """

    lazy_device = _META if fake is not None else device  # see fake_lazy_layers

    def make(t: torch.Tensor) -> torch.Tensor:
        lazy = _uninitialized(t, lazy_device)
        if lazy is not None:
            return lazy
        target = _target_dtype(t, dtype)
        with fake if fake is not None else contextlib.nullcontext():
            try:
                out = torch.empty_strided(t.size(), t.stride(), dtype=target, device=device)
            except (RuntimeError, NotImplementedError):  # sparse or strided subclasses
                out = torch.empty(t.shape, dtype=target, device=device)
        return _like(t, out)

    return make


def cloned_standins(dtype: torch.dtype | None) -> StandinFactory:
    """Real clones (same device, values and strides); the originals are only read."""

    def make(t: torch.Tensor) -> torch.Tensor:
        lazy = _uninitialized(t, t.device)
        if lazy is not None:
            return lazy
        return _like(t, t.detach().clone().to(_target_dtype(t, dtype)))

    return make


def random_standins(device: torch.device, dtype: torch.dtype | None) -> StandinFactory:
    """Real tensors with made-up values for a module that has none (built on meta).

    Floating parameters are drawn from N(0, 0.02) so that routing and masks see varied
    values; buffers and integer tensors are zeros (valid indices, neutral statistics).
    """

    def make(t: torch.Tensor) -> torch.Tensor:
        lazy = _uninitialized(t, device)
        if lazy is not None:
            return lazy
        out = torch.zeros(t.shape, dtype=_target_dtype(t, dtype), device=device)
        if isinstance(t, nn.Parameter) and out.is_floating_point():
            out.normal_(0.0, 0.02)
        return _like(t, out)

    return make


@contextlib.contextmanager
def fake_lazy_layers(module: nn.Module, fake: Any, device: torch.device) -> Iterator[None]:
    """Lazy layers of ``module`` (a fake stand-in) materialise on meta, then become fake.

    Inside fake mode torch's ``materialize`` cannot run (an uninitialised buffer refuses fake
    dispatch, and the ``.data`` it assigns would leave a plain meta tensor that no fake input
    can meet). So fake mode pauses around a lazy layer's own initialisation hook (its stand-ins
    are on meta: nothing is allocated), and right after it each new tensor becomes a fake one
    of the same shape on ``device``.
    """
    lazy = [
        m
        for m in module.modules()
        if isinstance(m, LazyModuleMixin) and m.has_uninitialized_params()
    ]
    paused: list[Any] = []
    handles: dict[int, list[RemovableHandle]] = {}

    def before(layer: nn.Module, args: Any) -> None:
        pause = without_fake_mode()
        pause.__enter__()
        paused.append(pause)

    def after(layer: nn.Module, args: Any) -> None:
        paused.pop().__exit__(None, None, None)
        for handle in handles.pop(id(layer), []):
            handle.remove()  # materialised once: later calls run as any layer's
        _meta_to_fake(layer, fake, device)

    for m in lazy:
        handles[id(m)] = [
            m.register_forward_pre_hook(before, prepend=True),
            m.register_forward_pre_hook(after),
        ]
    try:
        yield
    finally:
        while paused:  # a lazy initialisation that raised
            paused.pop().__exit__(None, None, None)
        for pair in handles.values():
            for handle in pair:
                handle.remove()


def _meta_to_fake(layer: nn.Module, fake: Any, device: torch.device) -> None:
    """``layer``'s own meta parameters and buffers replaced by fake ones on ``device``."""
    parameters, buffers, _ = module_registries(layer)
    for table in (parameters, buffers):
        for name, t in table.items():
            if t is not None and t.is_meta:  # a fake tensor says its fake device
                with fake:
                    out = torch.empty_strided(t.size(), t.stride(), dtype=t.dtype, device=device)
                table[name] = _like(t, out)


_LAZY = (nn.parameter.UninitializedParameter, nn.parameter.UninitializedBuffer)


def tensor_bytes(module: nn.Module) -> int:
    """Bytes of the distinct parameters and buffers of ``module`` (works on meta)."""
    seen: dict[int, torch.Tensor] = {}
    for t in (*module.parameters(), *module.buffers()):
        if not isinstance(t, _LAZY):
            seen[id(t)] = t
    return sum(t.numel() * t.element_size() for t in seen.values())
