"""The one place that touches private upstream APIs. Each name here has a smoke test."""

from __future__ import annotations

from typing import Any

__all__ = [
    "TorchDispatchMode",
    "FakeTensorMode",
    "WeakTensorKeyDictionary",
    "fake_fallback_errors",
    "op_schema",
    "op_overloads",
    "qualified_op_name",
    "has_data",
    "StorageWeakRef",
    "storage_key",
]

from torch._subclasses.fake_tensor import FakeTensorMode
from torch.multiprocessing.reductions import StorageWeakRef as _StorageWeakRef
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils.weak import WeakTensorKeyDictionary


def fake_fallback_errors() -> tuple[type[BaseException], ...]:
    """Exceptions fake tensors raise when an op needs real data (data-dependent shapes, .item())."""
    from torch._subclasses import fake_tensor

    names = (
        "DataDependentOutputException",
        "DynamicOutputShapeException",
        "UnsupportedOperatorException",
        "UnsupportedFakeTensorException",
    )
    found: list[Any] = [getattr(fake_tensor, n) for n in names if hasattr(fake_tensor, n)]
    try:
        from torch.fx.experimental.symbolic_shapes import GuardOnDataDependentSymNode

        found.append(GuardOnDataDependentSymNode)
    except ImportError:  # pragma: no cover - older torch
        pass
    return tuple(found)


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


# -- storages (runtime/memory.py) ---------------------------------------------------------------

# A weak reference to a C++ storage: ``expired()`` once the storage is freed (untyped upstream).
StorageWeakRef: Any = _StorageWeakRef


def storage_key(storage: Any) -> int:
    """An id of the C++ storage behind an ``UntypedStorage`` (``_cdata``): equal for every
    tensor and view that shares it, and stable while it lives."""
    return int(storage._cdata)
