"""The one place that touches private upstream APIs. Each name here has a smoke test."""

from __future__ import annotations

from typing import Any

__all__ = ["TorchDispatchMode", "FakeTensorMode", "WeakTensorKeyDictionary", "fake_fallback_errors"]

from torch._subclasses.fake_tensor import FakeTensorMode
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
