"""What a capture leaves in Python state outside the module: random generators, globals, classes.

The capture runs a stand-in copy of the module (:mod:`~pytest_modelprof.capture.standin`), but
module-level state and class attributes are shared by every copy: a forward that writes its last
output into a module's global registry, or onto its class, leaves a meta or fake stand-in there,
and the next real forward may read it. :func:`global_standins` finds what a capture left where
it can be found (see its docstring for how far it looks); :func:`python_random_states` restores
Python's and NumPy's global generators, as ``torch.random.fork_rng`` restores torch's.
"""

from __future__ import annotations

import collections
import random
import sys
import types
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any, Final

import torch
from torch import nn

from pytest_modelprof._compat import has_data

__all__ = ["python_random_states", "GlobalScan", "global_standins"]

_DEPTH: Final = 4
"""How deep a scan follows containers and plain objects below a global or class attribute."""
_MAX_ITEMS: Final = 20_000
"""At most this many values are looked at per scan (a huge global table is not walked whole)."""
_SKIP = (types.ModuleType, type, types.FunctionType, types.BuiltinFunctionType, types.MethodType)


@contextmanager
def python_random_states() -> Iterator[None]:
    """Python's ``random`` and (when imported) NumPy's global generator as they were before."""
    python_state = random.getstate()
    numpy = sys.modules.get("numpy")
    numpy_state = numpy.random.get_state() if numpy is not None else None
    try:
        yield
    finally:
        random.setstate(python_state)
        if numpy is not None:
            numpy.random.set_state(numpy_state)


def _namespaces(module: nn.Module) -> list[tuple[str, Mapping[str, Any]]]:
    """The globals of the Python modules that define the model's classes, and those classes'
    own attributes (torch's and the standard library's left out), each once, live."""
    found: dict[str, Mapping[str, Any]] = {}
    for kind in {type(m) for m in module.modules()}:
        for cls in kind.__mro__:
            top = cls.__module__.partition(".")[0]
            if top in ("torch", "builtins") or top in sys.stdlib_module_names:
                continue
            found.setdefault(f"{cls.__module__}.{cls.__qualname__}", vars(cls))
            python_module = sys.modules.get(cls.__module__)
            if python_module is not None:
                found.setdefault(cls.__module__, vars(python_module))
    return list(found.items())


class GlobalScan:
    """Stand-ins reachable from a model's module globals and classes: before, then after."""

    def __init__(self, module: nn.Module) -> None:
        self._namespaces = _namespaces(module)
        self._copies = {id(m) for m in module.modules()}  # the stand-in copy's own modules
        # What is there before the capture was not put there by it: the user's meta tensors,
        # and modules the model shares with its class (ultralytics' ``Conv.default_act``, one
        # activation every layer uses). Held, so that their ids are not reused.
        self._before = {id(v): v for _, v in self._walk()}

    def _walk(self) -> Iterator[tuple[str, Any]]:
        """``(where, value)`` for each stand-in found: a tensor without data, a copied module.

        Breadth first, so that the budget is spent on what lies near a global before what lies
        deep below another (a global object whose graph reaches pytest's whole session would
        otherwise use it up before a registry one level down)."""
        budget = _MAX_ITEMS
        seen: set[int] = set()
        queue: collections.deque[tuple[str, Any, int]] = collections.deque(
            (f"{name}.{key}", value, 0)
            for name, namespace in self._namespaces
            for key, value in list(namespace.items())
        )
        while queue and budget > 0:
            where, value, depth = queue.popleft()
            budget -= 1
            if isinstance(value, torch.Tensor):  # every place that holds one is named
                if not has_data(value):
                    yield where, value
                continue
            if isinstance(value, nn.Module):
                if id(value) in self._copies:
                    yield where, value
                continue
            if depth >= _DEPTH or id(value) in seen:  # a container reached twice: walked once
                continue
            seen.add(id(value))
            queue.extend((place, child, depth + 1) for place, child in _children(where, value))

    def left(self) -> list[str]:
        """Where stand-ins are now that were not there before: ``"mod.REGISTRY['k'] (a meta
        tensor of shape (2, 8))"``."""
        found: list[str] = []
        for where, value in self._walk():
            if id(value) in self._before:
                continue
            if isinstance(value, torch.Tensor):
                kind = "meta" if value.is_meta else "fake"
                found.append(f"{where} (a {kind} tensor of shape {tuple(value.shape)})")
            else:
                found.append(f"{where} (the capture's stand-in copy of a {type(value).__name__})")
        return found


def _children(where: str, value: Any) -> list[tuple[str, Any]]:
    """What a container or a plain object holds, each with its place; nothing for the rest."""
    if isinstance(value, _SKIP) or type(value) in (str, bytes):
        return []
    if isinstance(value, dict):
        return [(f"{where}[{k!r}]", v) for k, v in list(value.items())]
    if isinstance(value, (list, tuple, collections.deque)):
        return [(f"{where}[{i}]", v) for i, v in enumerate(list(value))]
    if isinstance(value, (set, frozenset)):
        return [(f"{where}{{...}}", v) for v in list(value)]
    attrs = getattr(value, "__dict__", None)
    top = type(value).__module__.partition(".")[0]
    if not isinstance(attrs, dict) or top == "torch" or top in sys.stdlib_module_names:
        return []
    return [(f"{where}.{k}", v) for k, v in list(attrs.items())]


def global_standins(label: str, mode: str, places: list[str]) -> str:
    """The warning for stand-ins a capture left in global state."""
    shown = "; ".join(places[:5]) + (f"; and {len(places) - 5} more" if len(places) > 5 else "")
    return (
        f"{label}: the forward wrote stand-ins of the {mode} capture into module-level or class "
        f"state, where they stay: {shown}. The capture runs a copy of the module, but Python "
        "globals and class attributes are shared with the real model, whose next forward may "
        "read them; reset that state before running it (or profile with mode='real')."
    )
