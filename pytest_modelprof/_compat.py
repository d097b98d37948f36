"""The one place that touches private upstream APIs. Each name here has a smoke test."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any, cast

__all__ = [
    "TorchDispatchMode",
    "FakeTensorMode",
    "WeakTensorKeyDictionary",
    "fake_fallback_errors",
    "op_schema",
    "qualified_op_name",
    "has_data",
    "view_base",
    "StorageWeakRef",
    "storage_key",
    "dispatch_modes_below",
]

import torch
from torch._C import _len_torch_dispatch_stack
from torch._subclasses.fake_tensor import FakeTensor as _FakeTensor
from torch._subclasses.fake_tensor import FakeTensorMode
from torch._subclasses.fake_tensor import in_kernel_invocation_manager as _in_kernel
from torch.amp import GradScaler as _GradScaler
from torch.multiprocessing.reductions import StorageWeakRef as _StorageWeakRef
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils.weak import WeakTensorKeyDictionary


def fake_fallback_errors() -> tuple[type[BaseException], ...]:
    """Exceptions fake tensors raise when an op needs real data (data-dependent shapes, .item())."""
    from torch._subclasses import fake_tensor
    from torch.fx.experimental.symbolic_shapes import GuardOnDataDependentSymNode

    return (
        fake_tensor.DataDependentOutputException,
        fake_tensor.DynamicOutputShapeException,
        fake_tensor.UnsupportedOperatorException,
        fake_tensor.UnsupportedFakeTensorException,
        GuardOnDataDependentSymNode,
    )


# -- ATen op introspection (OpOverload._schema, OpOverloadPacket._qualified_op_name) -----------


def op_schema(op: Any) -> Any:
    """The ``torch._C.FunctionSchema`` of an ``OpOverload`` (argument names, alias info)."""
    return op._schema


def op_overloads(packet: Any) -> list[Any]:
    """Every ``OpOverload`` of an ``OpOverloadPacket`` (``aten.max`` -> default, dim, ...)."""
    return [getattr(packet, name) for name in packet.overloads()]


def qualified_op_name(op: Any) -> str:
    """``"aten::mm"`` for the packet ``aten.mm`` and for any of its overloads."""
    qualified = getattr(op, "_qualified_op_name", None)  # OpOverloadPacket
    if qualified is None:
        qualified = op._schema.name  # OpOverload
    return str(qualified)


def has_data(t: Any) -> bool:
    """Whether a tensor's values can be read: not meta, not a fake tensor (FakeTensor)."""
    from torch._subclasses.fake_tensor import is_fake

    return not t.is_meta and not is_fake(t)


def view_base(t: Any) -> Any:
    """The tensor ``t`` is a view of (``_base``), or ``None`` when it is not a view."""
    return t._base


def dispatch_modes_below() -> int:
    """How many dispatch modes an op reaches next: inside a mode's ``__torch_dispatch__``,
    the modes entered before it (``_len_torch_dispatch_stack``)."""
    return int(_len_torch_dispatch_stack())


# -- nn.Module's own registries (capture/standin.py, tests/unit/test_never_touch.py) ----------

__all__ += ["module_registries", "registries_state"]


def module_registries(m: Any) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    """``m``'s own parameters, buffers and child modules as ``nn.Module`` keeps them
    (``_parameters``, ``_buffers``, ``_modules``), ``None`` entries included, which the public
    ``named_*`` iterators skip."""
    return m._parameters, m._buffers, m._modules


def registries_state(
    parameters: dict[str, Any], buffers: dict[str, Any], modules: dict[str, Any]
) -> dict[str, Any]:
    """The ``__dict__`` entries that make these the registries of a module built without
    ``__init__`` (``object.__new__``), as :func:`module_registries` reads them back."""
    return {"_parameters": parameters, "_buffers": buffers, "_modules": modules}


# -- GradScaler's step on tensors without data (fit/step.py) -------------------------------------

__all__ += ["NoOverflowGradScaler", "no_overflow_grad_scaler"]


class NoOverflowGradScaler(_GradScaler):
    """``torch.amp.GradScaler`` whose ``step`` always takes the update, as it does when no
    gradient overflowed.

    Everything else is torch's own: ``scale``, ``unscale_`` (found-inf per device, gradients
    unscaled in place), a fused optimizer's ``grad_scale``/``found_inf``, ``update``. Only
    the private ``_maybe_opt_step`` is replaced: it reads the found-infs with ``.item()``,
    which has no value on fake or meta tensors (and allocates nothing on real ones).
    """

    def _maybe_opt_step(
        self, optimizer: Any, optimizer_state: Any, *args: Any, **kwargs: Any
    ) -> Any:
        return optimizer.step(*args, **kwargs)

    def state_tensors(self) -> list[Any]:
        """What the scaler keeps between steps: its scale and growth tracker (once made)."""
        return [t for t in (self._scale, self._growth_tracker) if t is not None]


def no_overflow_grad_scaler(device: str) -> NoOverflowGradScaler:
    """A :class:`NoOverflowGradScaler` for ``device`` (``"cpu"``, ``"cuda"``)."""
    return NoOverflowGradScaler(device)


# -- meta kernels that refuse what the real kernel takes (capture/tracer.py) ---------------------

__all__ += ["own_meta_rule"]


def _grouped_mm_rule(
    mat_a: Any, mat2: Any, offs: Any = None, bias: Any = None, out_dtype: Any = None
) -> Any:
    """Output of ``aten._grouped_mm`` from shapes alone, for any floating dtype.

    torch 2.14's meta kernel (``torch._meta_registrations._meta_grouped_mm_common``) checks the
    CUDA kernel's dtypes and refuses float32, which the CPU kernel takes; MoE experts in
    transformers 5 call it. The shapes follow ``_create_grouped_mm_output_tensor``.
    """
    import torch

    a, b = mat_a, mat2

    def need(ok: bool, what: str) -> None:
        if not ok:
            raise RuntimeError(
                f"_grouped_mm: {what} (mat_a {tuple(a.shape)} {a.dtype}, "
                f"mat2 {tuple(b.shape)} {b.dtype})"
            )

    need(a.dim() in (2, 3) and b.dim() in (2, 3), "operands must be 2-D or 3-D")
    need(a.is_floating_point() and b.dtype == a.dtype, "operands must share a floating dtype")
    need(a.shape[-1] == b.shape[-2], "the contraction dimensions differ")
    if a.dim() == 2 or b.dim() == 2:
        need(
            offs is not None and offs.dim() == 1 and offs.dtype == torch.int32,
            "a 2-D operand needs 1-D int32 offsets",
        )
    if a.dim() == 2 and b.dim() == 2:
        out_size = [offs.shape[0], a.shape[0], b.shape[1]]
    elif a.dim() == 2:
        need(offs.shape[0] == b.shape[0], "offsets and mat2 groups differ")
        out_size = [a.shape[0], b.shape[-1]]
    elif b.dim() == 2:
        need(offs.shape[0] == a.shape[0], "offsets and mat_a groups differ")
        out_size = [a.shape[1], b.shape[1]]
    else:
        need(a.shape[0] == b.shape[0], "the batch dimensions differ")
        out_size = [a.shape[0], a.shape[1], b.shape[-1]]
    dtype: torch.dtype = out_dtype or a.dtype
    return a.new_empty(out_size, dtype=dtype)


def own_meta_rule(func: Any) -> Any:
    """Our shape rule for ``func`` (an ``OpOverload``) where its meta/fake kernel refuses
    arguments the real kernel takes; ``None`` for every other op.

    The tracer calls it only after the native kernel raised on meta or fake tensors, so a torch
    whose kernel accepts the arguments never reaches it.
    """
    try:
        return _RULE_OF[func]
    except KeyError:  # str(func) costs microseconds, and the tracers ask once per op
        rule = _RULE_OF[func] = _OWN_META_RULES.get(str(func))
        return rule


_OWN_META_RULES: dict[str, Any] = {"aten._grouped_mm.default": _grouped_mm_rule}
_RULE_OF: dict[Any, Any] = {}


# -- storages (runtime/memory.py) ---------------------------------------------------------------

# A weak reference to a C++ storage: ``expired()`` once the storage is freed (untyped upstream).
StorageWeakRef: Any = _StorageWeakRef


def storage_key(storage: Any) -> int:
    """An id of the C++ storage behind an ``UntypedStorage`` (``_cdata``): equal for every
    tensor and view that shares it, and stable while it lives."""
    return int(storage._cdata)


# -- fake tensors answered from shapes (capture/metacache.py) -------------------------------------

__all__ += [
    "fake_mode_below",
    "fake_parts",
    "fake_device",
    "new_fake_tensor",
    "fake_view",
    "without_fake_mode",
]


def fake_mode_below() -> Any:
    """The ``FakeTensorMode`` an op reaches next from inside a dispatch mode, or None."""
    return torch._C._get_dispatch_mode(torch._C._TorchDispatchModeKey.FAKE)


def without_fake_mode() -> contextlib.AbstractContextManager[Any]:
    """Ops in the block run on the real tensors they are given, past the active fake mode.

    torch's own context manager, not a wrapper: an error of the real kernel then passes no
    frame of this package (which would make it look like ours to ``capture/classify.py``).
    """
    from torch._subclasses.fake_tensor import unset_fake_temporarily

    return unset_fake_temporarily()


def fake_parts(t: Any) -> tuple[Any, Any] | None:
    """``(mode, device)`` of a fake tensor whose values are unknown (no constant), else None."""
    if type(t) is not _FakeTensor or t.constant is not None:
        return None
    return t.fake_mode, t.fake_device


def fake_device(t: Any) -> Any:
    """The device a fake tensor stands for (what ``prim.device`` answers), else None."""
    if type(t) is not _FakeTensor or t.fake_mode.in_kernel_invocation:
        return None
    return t.fake_device


def new_fake_tensor(mode: Any, shape: Any, stride: Any, dtype: Any, device: Any) -> Any:
    """A fresh empty fake tensor of ``mode`` on ``device`` (its own storage), as fake mode's
    own dispatch cache makes one (``_get_output_tensor_from_cache_entry``)."""
    with _in_kernel(mode):
        empty = torch.empty_strided(shape, stride, dtype=dtype, device="meta")
    return _FakeTensor(mode, empty, device)


def fake_view(
    mode: Any, base: Any, shape: Any, stride: Any, offset: int, dtype: Any, device: Any
) -> Any:
    """A fake tensor of ``mode`` over ``base``'s storage (a view's result), as fake mode's
    own dispatch cache makes one."""
    storage = base.untyped_storage()
    with _in_kernel(mode):
        empty = torch.empty_strided(shape, stride, dtype=dtype, device="meta")
        empty.set_(storage, offset, shape, stride)
    return _FakeTensor(mode, empty, device)


# -- torch.compile health: Dynamo and Inductor internals ------------------------------------------
# Kept together so the next torch upgrade touches one block. Each has a smoke test in
# tests/unit/runtime/test_compile.py.

__all__ += [
    "BreakEvent",
    "dynamo_break_events",
    "dynamo_frames_compiled",
    "dynamo_explain",
    "dynamo_cache_entries",
    "dynamo_scoped",
    "inductor_kernel_count",
    "reset_inductor_metrics",
    "inductor_caches_disabled",
]

#: One graph break as Dynamo recorded it: its reason text and the user stack, outermost first.
BreakEvent = tuple[str, list[tuple[str, int]]]


def dynamo_break_events() -> list[BreakEvent]:
    """Every graph break Dynamo made since its last reset, in order.

    Read from Dynamo's own list (``torch._dynamo.utils.graph_break_reasons``), which also holds
    the breaks that ``explain`` misses because no op preceded them.
    """
    from torch._dynamo import utils

    return [
        (str(r.reason), [(str(f.filename), int(f.lineno or 0)) for f in r.user_stack])
        for r in utils.graph_break_reasons
    ]


def dynamo_frames_compiled() -> int:
    """Frames Dynamo has compiled in this process so far (its ``frames/total`` counter)."""
    from torch._dynamo import utils

    return int(utils.counters["frames"]["total"])


def dynamo_explain(fn: Any) -> Any:
    """``torch._dynamo.explain(fn)``: the upstream tool compile health is benchmarked against."""
    import torch._dynamo

    return torch._dynamo.explain(fn)


def dynamo_cache_entries(code: Any) -> int:
    """How many compiled entries Dynamo holds for a code object (0 after a reset)."""
    from torch._dynamo import eval_frame

    return len(eval_frame._debug_get_cache_entry_list(code))


@contextlib.contextmanager
def dynamo_scoped() -> Iterator[None]:
    """Compile with Dynamo state of its own, leaving the process's compiled code as it was.

    Inside, Dynamo's graph-break records and its profile-guided dynamic-shape state start
    empty (as after ``torch.compiler.reset()``); on exit both are put back and the compiled
    entries made inside are dropped. Code that held compiled entries before (the user's
    ``torch.compile``d functions) keeps them: nothing of the process recompiles. (Entries made
    inside for such code, when the user compiled the very same forward, stay beside the
    user's; their backend guard never matches the user's calls.)
    """
    from torch._C._dynamo.eval_frame import reset_code
    from torch._dynamo import convert_frame, pgo, utils

    def codes() -> list[Any]:
        refs = [*convert_frame.input_codes.seen, *convert_frame.output_codes.seen]
        return [code for code in (ref() for ref in refs) if code is not None]

    # Code with compiled entries now is the process's own; any other code compiled inside is
    # ours (also code Dynamo saw before whose entries a reset or a finished scope dropped).
    kept = {id(code) for code in codes() if dynamo_cache_entries(code)}
    code_state = (pgo._CODE_STATE, pgo._INIT_CODE_STATE)
    breaks = list(utils.graph_break_reasons)
    pgo.reset_code_state()
    utils.graph_break_reasons.clear()
    try:
        yield
    finally:
        with convert_frame.compile_lock:
            for code in codes():
                if id(code) not in kept:
                    reset_code(code)
            pgo._CODE_STATE, pgo._INIT_CODE_STATE = code_state
            utils.graph_break_reasons[:] = breaks


def inductor_kernel_count() -> int:
    """Kernels Inductor generated since :func:`reset_inductor_metrics` (cache hits replay them)."""
    from torch._inductor import metrics

    return int(metrics.generated_kernel_count)


def reset_inductor_metrics() -> None:
    """Zero Inductor's counters (``torch._inductor.metrics.reset``)."""
    from torch._inductor import metrics

    metrics.reset()


def inductor_caches_disabled() -> Any:
    """Context manager: every compile cache off (``force_disable_caches``), restored on exit.

    Compile times are only comparable between runs when each compiles from scratch.
    """
    import torch.compiler

    return cast(Any, torch.compiler).config.patch(force_disable_caches=True)


# -- callgrind client requests (torch._C._valgrind_*, what torch.utils.benchmark uses) --------

__all__ += ["valgrind_supported", "callgrind_toggle", "callgrind_toggle_and_dump"]


def valgrind_supported() -> bool:
    """Whether this torch build was compiled with callgrind's client requests."""
    import torch

    return bool(torch._C._valgrind_supported_platform())


def callgrind_toggle() -> None:
    """Switch callgrind's event collection on or off (a no-op outside valgrind)."""
    import torch

    torch._C._valgrind_toggle()


def callgrind_toggle_and_dump() -> None:
    """Switch collection off (it must be on) and dump the counts since the last dump."""
    import torch

    torch._C._valgrind_toggle_and_dump_stats()
