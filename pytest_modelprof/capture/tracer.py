"""One dispatch-level pass: every ATen op, attributed to the innermost running module.

The tracer combines a ``TorchDispatchMode`` (sees every op, on real, meta or fake tensors, with
no FX tracing) with global module forward hooks (know which module is running). For each op it
reads arguments by schema name, prices them with the cost registry, measures bytes, and links
each tensor input to the op that produced it. Tensor lifetimes (first write to last read, by
buffer) give the peak of live activation memory.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import nn
from torch.utils.hooks import RemovableHandle

from pytest_modelprof._compat import (
    TorchDispatchMode,
    WeakTensorKeyDictionary,
    fake_mode_below,
    has_data,
    own_meta_rule,
    without_fake_mode,
)
from pytest_modelprof._tensors import flat_tensors
from pytest_modelprof.capture import metacache
from pytest_modelprof.capture.ops import (
    OpCall,
    OpInfo,
    price,
    read_bytes,
    read_tensors,
    schema_info,
    tensor_meta,
)
from pytest_modelprof.capture.record import Capture, ModuleCall, OpRecord, Phase
from pytest_modelprof.capture.recurrent import RecurrentOnMeta
from pytest_modelprof.capture.sites import NO_SITE, CallSites
from pytest_modelprof.capture.values import KnownValues
from pytest_modelprof.costs.registry import CostRegistry

__all__ = ["Tracer", "tensor_meta"]


@dataclass(slots=True)
class _Buffer:
    nbytes: int
    born: int
    last_use: int
    activation: bool  # False for parameters, buffers and model inputs


class _DispatchHook(TorchDispatchMode):  # type: ignore[no-untyped-call]
    def __init__(self, tracer: Tracer) -> None:
        super().__init__()  # type: ignore[no-untyped-call]
        self.tracer = tracer

    def __torch_dispatch__(
        self, func: Any, types: Any, args: tuple[Any, ...] = (), kwargs: Any = None
    ) -> Any:
        kwargs = kwargs or {}
        key, out = metacache.lookup(func, args, kwargs)  # meta kernels: once per signature
        if out is None:
            # On fake tensors, inputs and what is computed from them alone keep their values.
            values = self.tracer.values if fake_mode_below() is not None else None
            known = values is not None and values.known(args, kwargs)
            try:
                out = func(*args, **kwargs)
            except Exception:
                if not known:
                    # A meta/fake kernel that refuses what the real kernel takes (torch 2.14's
                    # _grouped_mm and float32): our own shape rule, unless every tensor holds
                    # data (a real kernel's refusal). On fake tensors some may hold data: the
                    # known values (offsets built from constants) beside stand-ins.
                    rule = own_meta_rule(func)
                    if rule is None or all(has_data(t) for t in flat_tensors((args, kwargs))):
                        raise
                    out = rule(*args, **kwargs)
                # else: what fake tensors refuse for want of data (.item()), on known values
            if values is not None:
                if known and values.computable(out, args, kwargs):
                    with without_fake_mode():
                        out = func(*args, **kwargs)
                else:
                    values.forget_written(func, args, kwargs)
            if key is not None:
                metacache.remember(key, out, (args, kwargs))
        if not self.tracer.paused:
            self.tracer.record_op(func, args, kwargs, out)
        return out


class Tracer:
    """Collects a :class:`Capture` from one or more passes over ``model``."""

    def __init__(self, model: nn.Module, registry: CostRegistry) -> None:
        self.model = model
        self.registry = registry
        self.capture = Capture()
        self.phase: Phase = "forward"
        self.failed_at: str | None = None
        self._info: dict[Any, OpInfo] = {}
        self._stack: list[str] = []  # module paths, innermost last
        self._owners: list[int] = []  # id() of the module of each scope (-1: push_scope)
        self._returned: int | None = None  # the module whose forward just returned
        self._thread = threading.get_ident()  # the thread whose module calls are scoped
        self.paused = False  # ops the tracer itself runs (RecurrentOnMeta) are not the model's
        # False inside running_only: every op and module call runs, none is recorded.
        self._counting = True
        self.values = KnownValues()  # on fake tensors: what keeps real values
        self._has_recurrent = any(isinstance(m, nn.RNNBase) for m in model.modules())
        # The line of model code that called each forward op, so a report can name it.
        self._sites = CallSites()
        self.capture.sites = self._sites.locations
        # A module object can sit at several paths (ultralytics shares one SiLU across every
        # Conv block); a call is attributed to the path under the module that made it.
        self._paths: dict[int, list[str]] = {}
        self._types: dict[str, str] = {}
        for name, module in model.named_modules(remove_duplicate=False):
            self._paths.setdefault(id(module), []).append(name)
            self._types[name] = type(module).__name__
        self.capture.module_types = dict(self._types)
        self.capture.module_params = {
            name: sum(p.numel() for p in m.parameters(recurse=False))
            for name, m in model.named_modules()
        }
        # WeakTensorKeyDictionary is untyped upstream; Any keeps strict mypy quiet about .get.
        # tensor -> (producing op index or -1, buffer id, parameter/buffer name or None); one
        # weak lookup per input gives all three.
        self._producer: Any = WeakTensorKeyDictionary()
        self._buffers: list[_Buffer] = []
        self._called: set[str] = set()
        # Batch norm's save statistics, whose size differs between kernels; if nothing reads
        # them they are dropped from traffic and lifetimes in finish().
        self._aux: list[tuple[int, int]] = []
        # The last op that wrote into each buffer in place, possibly through a view
        # (``mask[a:b] = v``): later readers of any alias of that buffer depend on it.
        self._last_write: dict[int, int] = {}
        self._input_buffers: set[int] = set()
        self._input_ops: list[int] = []
        self.add_named_tensors(dict(model.named_parameters()))
        self.add_named_tensors(dict(model.named_buffers()))
        self._recording = True

    def add_named_tensors(self, tensors: dict[str, torch.Tensor]) -> None:
        """Parameters and buffers (also stand-ins swapped in by functional_call)."""
        for name, t in tensors.items():
            self._new_buffer(t, -1, activation=False, name=name)

    # -- module scope ---------------------------------------------------------------------
    # The module hooks are process-global: they fire for every module call in every thread.
    # Scopes are per capture *and* per thread: only calls made by the thread that runs
    # ``tracing()`` count, so another thread running the same model (a server, a second
    # profile) neither pushes scopes here nor adds calls. (The dispatch mode is thread-local
    # already: ops of other threads never reach ``record_op``.)
    # A failed call is told apart from a finished one without ``sys.exc_info()`` (which also
    # sees an exception the caller is merely handling): ``_post_hook`` runs only when forward
    # returned, and the always-called ``_exit_hook`` after it, or alone when forward raised.
    def _path_of(self, module: nn.Module) -> str | None:
        paths = self._paths.get(id(module))
        if paths is None:
            return None
        if len(paths) > 1 and self._stack:
            parent = self._stack[-1]
            prefix = parent + "." if parent else ""
            for path in paths:
                if path.startswith(prefix) and "." not in path[len(prefix) :]:
                    return path
        return paths[0]

    def _ours(self, module: nn.Module) -> bool:
        return id(module) in self._paths and threading.get_ident() == self._thread

    def _pre_hook(self, module: nn.Module, args: Any) -> None:
        if not self._ours(module):
            return
        path = self._path_of(module)
        if path is not None:
            self._stack.append(path)
            self._owners.append(id(module))
            self._called.add(path)

    def _post_hook(self, module: nn.Module, args: Any, output: Any) -> None:
        if not self._ours(module) or not self._owners or self._owners[-1] != id(module):
            return
        path = self._stack.pop()
        self._owners.pop()
        self._returned = id(module)
        self.failed_at = None  # a failure inside this call was handled by the model itself
        if self._recording and self._counting and self.phase == "forward":
            call = self.capture.modules.get(path)
            if call is None:
                call = self.capture.modules[path] = ModuleCall(path, self._types[path])
            call.calls += 1
            tensors: list[torch.Tensor] = []
            flat_tensors(output, tensors)
            if tensors:
                call.output_shape = tuple(int(s) for s in tensors[0].shape)

    def _exit_hook(self, module: nn.Module, args: Any, output: Any) -> None:
        if not self._ours(module):
            return
        if self._returned == id(module):
            self._returned = None  # forward returned; _post_hook did the bookkeeping
            return
        # forward raised: unwind to this module's scope; the innermost failure is kept.
        if id(module) in self._owners:
            while self._owners:
                owner = self._owners.pop()
                path = self._stack.pop()
                if self.failed_at is None:
                    self.failed_at = path
                if owner == id(module):
                    break

    def push_scope(self, path: str, module_type: str) -> None:
        """Attribute the ops that follow, to the end of :meth:`tracing`, to ``path`` (backward
        ops to a pseudo-layer)."""
        self.capture.module_types.setdefault(path, module_type)
        self._stack.append(path)
        self._owners.append(-1)

    @property
    def current_module(self) -> str:
        return self._stack[-1] if self._stack else ""

    # -- buffers and lifetimes ----------------------------------------------------------------
    def _new_buffer(
        self,
        t: torch.Tensor,
        op_index: int,
        *,
        activation: bool,
        nbytes: int | None = None,
        name: str | None = None,
    ) -> int:
        if nbytes is None:
            nbytes = tensor_meta(t).nbytes
        self._buffers.append(_Buffer(nbytes, op_index, op_index, activation))
        buf = len(self._buffers) - 1
        self._producer[t] = (op_index, buf, name)
        return buf

    def mark_inputs(self, values: Any) -> None:
        """Model inputs are live from the start; not counted as activations."""
        tensors: list[torch.Tensor] = []
        flat_tensors(list(values), tensors)
        for t in tensors:
            if t not in self._producer:
                self._new_buffer(t, -1, activation=False)
            self._input_buffers.add(self._producer[t][1])

    def mark_outputs(self, values: Any) -> None:
        """Model outputs stay live to the end of the pass."""
        tensors: list[torch.Tensor] = []
        flat_tensors(values if isinstance(values, (list, tuple)) else [values], tensors)
        end = len(self.capture.ops)
        producers: list[int] = []
        for t in tensors:
            entry = self._producer.get(t)
            if entry is not None:
                self._buffers[entry[1]].last_use = end
                if entry[0] >= 0:
                    producers.append(entry[0])
        self.capture.output_ops = tuple(sorted(set(producers)))

    # -- the per-op work ----------------------------------------------------------------------
    def record_op(self, func: Any, args: tuple[Any, ...], kwargs: dict[str, Any], out: Any) -> None:
        """Record one ATen op call (``func(*args, **kwargs)`` returned ``out``)."""
        if not self._counting:
            return  # a running_only pass (the dispatch hook and RecurrentOnMeta both land here)
        if func.namespace == "prim":
            return  # metadata queries (prim.device, prim.layout) that fake tensors dispatch
        info = self._info.get(func)
        if info is None:
            info = self._info[func] = schema_info(func, self.registry)
        index = len(self.capture.ops)

        in_tensors = read_tensors(info, args, kwargs)
        out_tensors: list[torch.Tensor] = []
        flat_tensors(out, out_tensors)
        in_meta = tuple(tensor_meta(t) for t in in_tensors)
        out_meta = tuple(tensor_meta(t) for t in out_tensors)
        call = OpCall(func, info, args, kwargs, out)
        if fake_mode_below() is None:
            cost, family = price(call, (in_tensors, in_meta), (out_tensors, out_meta))
        else:  # a formula reading a known value (grouped offsets) reads it, not a fake of it
            with without_fake_mode():
                cost, family = price(call, (in_tensors, in_meta), (out_tensors, out_meta))
        reads = self._link_inputs(index, info, in_tensors, in_meta)
        bytes_written = self._link_outputs(index, call, out_tensors, out_meta)

        self.capture.ops.append(
            OpRecord(
                index=index,
                op=info.name,
                family=family,
                module=self.current_module,
                phase=self.phase,
                inputs=in_meta,
                outputs=out_meta,
                flops=int(cost.flops),
                macs=int(cost.macs),
                bytes_read=reads.bytes_read,
                bytes_written=bytes_written,
                producers=tuple(reads.producers),
                params=tuple(reads.params),
                is_view=info.is_view,
                input_producers=tuple(reads.slots),
                # Views move nothing and backward ops have no line of model code above them.
                site=(
                    self._sites.here((self._types.get(self.current_module), func))
                    if self.phase == "forward" and not info.is_view
                    else NO_SITE
                ),
            )
        )
        if reads.reads_input:
            self._input_ops.append(index)

    def _link_inputs(
        self, index: int, info: OpInfo, tensors: list[torch.Tensor], metas: tuple[Any, ...]
    ) -> _Reads:
        """Dataflow: who produced each input; which parameters were read; bytes read."""
        reads = _Reads()
        for t, m in zip(tensors, metas, strict=True):
            entry = self._producer.get(t)
            if entry is None:  # a tensor created outside the capture (constant, closure)
                self._new_buffer(t, -1, activation=False, nbytes=m.nbytes)
                entry = self._producer[t]
            src, buf, name = entry
            src = max(src, self._last_write.get(buf, -1))
            reads.slots.append(src)
            self._buffers[buf].last_use = index
            reads.reads_input = reads.reads_input or buf in self._input_buffers
            if src >= 0 and src not in reads.producers:
                reads.producers.append(src)
            if name is not None and name not in reads.params:
                reads.params.append(name)
            if not info.is_view:
                reads.bytes_read += read_bytes(t, m)
        return reads

    def _link_outputs(
        self, index: int, call: OpCall, tensors: list[torch.Tensor], metas: tuple[Any, ...]
    ) -> int:
        """Outputs: new buffers unless the schema says they alias an input; bytes written."""
        info = call.info
        bytes_written = 0
        for i, (t, m) in enumerate(zip(tensors, metas, strict=True)):
            alias, writes = info.aliases[i] if i < len(info.aliases) else (None, False)
            if alias is None and len(info.aliases) == 1 and info.aliases[0][0] is not None:
                alias, writes = info.aliases[0]  # a list return (split) shares one alias set
            source = call.argument(alias) if alias is not None else None
            base = self._producer.get(source) if source is not None else None
            if base is not None:
                self._producer[t] = (index, base[1], None)
                self._buffers[base[1]].last_use = index
                if writes:
                    bytes_written += m.nbytes
                    self._last_write[base[1]] = index
            else:
                buf = self._new_buffer(t, index, activation=True, nbytes=m.nbytes)
                bytes_written += m.nbytes
                if info.aux_from and i >= info.aux_from:
                    self._aux.append((index, buf))
        return bytes_written

    # -- driving ---------------------------------------------------------------------------
    @contextmanager
    def tracing(self, *, record: bool = True) -> Iterator[Tracer]:
        """Install hooks and the dispatch mode for the duration of the block.

        ``record=False`` installs only the module hooks (a warm-up pass that still tells which
        layer failed).
        """
        self._recording = record
        self._thread = threading.get_ident()
        # The capture allocates many small objects that hold no cycles; the cyclic collector's
        # full passes over a heap that grows with the model would make it superlinear in depth.
        # NB: the collector is process-wide, so it is paused for other threads too, and it is
        # left as found (a caller that disabled it keeps it disabled).
        gc_was_enabled = gc.isenabled()
        gc.disable()
        pre: RemovableHandle = nn.modules.module.register_module_forward_pre_hook(self._pre_hook)
        # Registered in this order, the always-called exit hook runs after the post hook.
        post: RemovableHandle = nn.modules.module.register_module_forward_hook(self._post_hook)
        exit_: RemovableHandle = nn.modules.module.register_module_forward_hook(
            self._exit_hook, always_call=True
        )
        try:
            if record:
                with ExitStack() as modes:
                    modes.enter_context(_DispatchHook(self))
                    if self._has_recurrent:
                        modes.enter_context(RecurrentOnMeta(self))
                    yield self
            else:
                yield self
        finally:
            pre.remove()
            post.remove()
            exit_.remove()
            self._stack.clear()
            self._owners.clear()
            if gc_was_enabled:
                gc.enable()

    @contextmanager
    def running_only(self) -> Iterator[Tracer]:
        """Run ops through the dispatch hook (meta-kernel cache, own shape rules), record none.

        For a pass whose state is needed but whose cost is not (an LLM's cache filled to the
        context length before the counted decode step): it runs exactly as a counted pass would,
        and the capture gains no op and no module call.
        """
        self._counting = False
        try:
            with self.tracing():
                yield self
        finally:
            self._counting = True

    def finish(self) -> Capture:
        """Compute lifetimes, peak and uncalled modules; return the capture."""
        for index, buf_id in self._aux:
            buf = self._buffers[buf_id]
            if buf.last_use == buf.born:
                self.capture.ops[index].bytes_written -= buf.nbytes
                buf.activation = False
        events: dict[int, int] = {}
        activation = 0
        for buf in self._buffers:
            if not buf.activation:
                continue
            activation += buf.nbytes
            events[buf.born] = events.get(buf.born, 0) + buf.nbytes
            events[buf.last_use + 1] = events.get(buf.last_use + 1, 0) - buf.nbytes
        live = peak = 0
        for at in sorted(events):
            live += events[at]
            peak = max(peak, live)
        self.capture.peak_activation_bytes = peak
        self.capture.input_ops = tuple(self._input_ops)
        self.capture.activation_bytes = activation
        self.capture.uncalled_modules = _top_uncalled(list(self._types), self._called)
        return self.capture


@dataclass(slots=True)
class _Reads:
    """What an op's inputs tell: producers, parameters read, bytes read."""

    producers: list[int] = field(default_factory=list)
    slots: list[int] = field(default_factory=list)  # the producer of each input, in order
    params: list[str] = field(default_factory=list)
    bytes_read: int = 0
    reads_input: bool = False


def _top_uncalled(paths: list[str], called: set[str]) -> list[str]:
    """Topmost modules of which nothing ran.

    A container that is iterated rather than called (ModuleList, a ModuleDict, a Sequential
    walked by hand) is not uncalled when its children ran.
    """
    active = set(called)
    for path in called:
        while path:
            path = path.rpartition(".")[0]
            active.add(path)
    out: list[str] = []
    for path in paths:
        if not path or path in active:
            continue
        parent = path.rpartition(".")[0]
        if parent == "" or parent in active:
            out.append(path)
    return sorted(out)
