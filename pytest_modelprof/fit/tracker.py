"""Every storage's lifetime over one step, op by op, on meta, fake or real tensors alike.

:class:`LifetimeTracker` is a dispatch mode. For each *new* storage an op returns it records
the bytes, the op count at which it appeared and the phase (forward, backward, optimizer), and
a weak reference whose callback records the op count at which the storage was freed. Torch
keeps a storage's Python object alive as long as its C++ storage lives (autograd's saved
tensors included), so the callback fires exactly when the memory would be released. Unlike a
sweep over every live storage after each op (``runtime.memory.AllocationTracker``), the cost
per op does not grow with the number of live storages: a 70B decoder's step is ~30,000 ops.

The log is kept, so the peak can be re-evaluated with components scaled (data-parallel
sharding divides gradients and optimizer state) without running the step again.
"""

from __future__ import annotations

import logging
import weakref
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Literal

import torch
from torch import nn

from pytest_modelprof._compat import (
    TorchDispatchMode,
    fake_device,
    has_data,
    own_meta_rule,
    qualified_op_name,
    storage_key,
)
from pytest_modelprof._tensors import flat_tensors
from pytest_modelprof.capture import metacache

__all__ = ["Allocation", "LifetimeTracker", "module_scopes"]

Phase = Literal["forward", "backward", "optimizer"]

#: Op counts are doubled: an op's outputs appear at ``2k``; a storage freed inside op ``k``
#: (before its outputs are registered) is freed at ``2k``, one freed after it at ``2k + 1``.
#: The live set measured after op ``k`` is every storage with ``born <= 2k < freed``.
NEVER = 1 << 62


@dataclass
class Allocation:
    """One storage: its bytes, when it appeared and was freed (doubled op counts), its phase."""

    nbytes: int
    born: int
    phase: Phase
    key: int
    freed: int = NEVER
    ref: Any = field(default=None, repr=False)
    #: A cast copy of a parameter (autocast's weight cache): ZeRO-3 keeps one unit's at a time.
    param_copy: bool = False


class LifetimeTracker(TorchDispatchMode):  # type: ignore[no-untyped-call]
    """Records every new storage an op returns and when it is freed; ``known`` ones are not new.

    ``phase`` tags allocations; ``scope`` (a list, innermost last) names the module running.
    """

    def __init__(
        self, known: Iterable[torch.Tensor] = (), params: Iterable[torch.Tensor] = ()
    ) -> None:
        super().__init__()  # type: ignore[no-untyped-call]
        self._known = {storage_key(t.untyped_storage()) for t in known}
        self._params = {storage_key(t.untyped_storage()) for t in params}
        self._live: dict[int, Allocation] = {}
        self.log: list[Allocation] = []
        self.phase: Phase = "forward"
        self.scope: list[str] = []
        self.clock = 0
        self.live_bytes = 0
        self.peak_bytes = 0
        self.peak_clock = 0
        self.peak_op = ""
        self.peak_module = ""
        self.peak_phase: Phase = "forward"
        self.phase_end: dict[str, int] = {}
        self.ops = 0
        # doubled op count -> (op, module) of every op that allocated (the sharded peak's moment)
        self.moments: dict[int, tuple[str, str]] = {}

    def set_phase(self, phase: Phase) -> None:
        """Start ``phase``; the previous one ends at the current op count."""
        self.phase_end[self.phase] = self.clock
        self.phase = phase

    def finish(self) -> None:
        """End the last phase (call after the step, still inside the mode or not)."""
        self.phase_end[self.phase] = self.clock

    def __torch_dispatch__(
        self, func: Any, types: Any, args: tuple[Any, ...] = (), kwargs: Any = None
    ) -> Any:
        if func is _DEVICE:  # fake tensors answer .device through dispatch: 2/3 of all calls
            return _device(func, args, kwargs)
        self.ops += 1
        self.clock = 2 * self.ops
        kwargs = kwargs or {}
        # meta and fake kernels: once per signature
        key, out = metacache.lookup(func, args, kwargs, fake=True)
        if out is None:
            out = _run(func, args, kwargs)
            if key is not None:
                metacache.remember(key, out, (args, kwargs))
        if not isinstance(out, (torch.Tensor, tuple, list)):  # prim.device, sizes: no storage
            self.clock += 1
            return out
        grew = False
        for t in flat_tensors(out, []):
            st = t.untyped_storage()
            key = storage_key(st)
            if key in self._live or key in self._known:
                continue
            nbytes = st.nbytes()
            if nbytes == 0:
                continue
            rec = Allocation(nbytes, self.clock, self.phase, key)
            rec.param_copy = self._casts_a_parameter(func, args)
            rec.ref = weakref.ref(st, self._freed_callback(rec))
            self._live[key] = rec
            self.log.append(rec)
            self.live_bytes += nbytes
            grew = True
        if grew:
            where = (qualified_op_name(func), self.scope[-1] if self.scope else f"({self.phase})")
            self.moments[self.clock] = where
            if self.live_bytes > self.peak_bytes:
                self.peak_bytes = self.live_bytes
                self.peak_clock = self.clock
                self.peak_op, self.peak_module = where
                self.peak_phase = self.phase
        self.clock += 1
        return out

    def _casts_a_parameter(self, func: Any, args: tuple[Any, ...]) -> bool:
        if not self._params or func.__name__.partition(".")[0] != "_to_copy" or not args:
            return False
        src = args[0]
        return isinstance(src, torch.Tensor) and storage_key(src.untyped_storage()) in self._params

    def _freed_callback(self, rec: Allocation) -> Any:
        def freed(_: Any) -> None:
            rec.freed = self.clock
            if self._live.get(rec.key) is rec:
                del self._live[rec.key]
                self.live_bytes -= rec.nbytes

        return freed

    def live_at(self, clock: int) -> list[Allocation]:
        """The storages alive at ``clock`` (a doubled op count)."""
        return [a for a in self.log if a.born <= clock < a.freed]


_FAKE_LOG = "torch._subclasses.fake_tensor"
_DEVICE = torch.ops.prim.device.default


def _device(func: Any, args: tuple[Any, ...], kwargs: Any) -> Any:
    """``prim.device``: a fake tensor's own answer, without a trip through fake mode."""
    device = fake_device(args[0]) if len(args) == 1 else None
    return device if device is not None else func(*args, **(kwargs or {}))


def _run(func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """The kernel's outputs, or our own shape rule's where a meta/fake kernel refuses."""
    rule = own_meta_rule(func)
    if rule is None or any(has_data(t) for t in flat_tensors((args, kwargs))):
        return func(*args, **kwargs)
    # A meta/fake kernel that refuses what the real kernel takes (torch 2.14's _grouped_mm and
    # float32): our own shape rule. Fake tensors log the refusal with its traceback, and a
    # captured log record (pytest's) would keep every tensor of those frames alive: the log is
    # off for this one call.
    with _quiet(_FAKE_LOG):
        try:
            return func(*args, **kwargs)
        except Exception:
            return rule(*args, **kwargs)


@contextmanager
def _quiet(name: str) -> Iterator[None]:
    logger = logging.getLogger(name)
    was = logger.disabled
    logger.disabled = True
    try:
        yield
    finally:
        logger.disabled = was


@contextmanager
def module_scopes(model: nn.Module, scope: list[str]) -> Iterator[None]:
    """Keep ``scope`` the stack of ``model``'s modules whose forward is running (global hooks).

    Only the model's own modules are named ("(model)" for the root); a shared module is named
    by its first path, as ``named_modules`` lists it.
    """
    from torch.nn.modules.module import (
        register_module_forward_hook,
        register_module_forward_pre_hook,
    )

    names = {id(m): (name or "(model)") for name, m in model.named_modules()}

    def enter(module: nn.Module, _args: Any) -> None:
        name = names.get(id(module))
        if name is not None:
            scope.append(name)

    def leave(module: nn.Module, _args: Any, _out: Any) -> None:
        name = names.get(id(module))
        if name is not None and scope and scope[-1] == name:
            scope.pop()

    pre = register_module_forward_pre_hook(enter)
    post = register_module_forward_hook(leave, always_call=True)
    try:
        yield
    finally:
        pre.remove()
        post.remove()
