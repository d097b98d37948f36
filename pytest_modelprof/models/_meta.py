"""Let builders that do Python arithmetic on tensors construct under ``torch.device("meta")``.

Some constructors compute their *configuration* with tensors and read it back with ``.tolist()``
or ``float()``: torchvision's RegNet (``BlockParams.from_init_params``) and ultralytics' detection
heads (strides from a dry forward pass). Under an ambient meta device those tensors have no data
and the build fails, so the engine would fall back to a full CPU build (10 s and 2.6 GB for
``regnet_y_128gf``). Creating only the *device-less* ``torch.arange``/``torch.tensor`` calls on
the CPU keeps that arithmetic readable; parameters made by ``torch.empty`` & co. still follow
the ambient device, and the few tensors that ``torch.tensor`` put on the CPU *as state* (e.g.
BatchNorm's ``num_batches_tracked``) are moved back to the ambient device afterwards.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from torch import nn

__all__ = ["meta_safe_build", "allocation_budget", "AllocationLimitExceeded"]


def meta_safe_build(build: Callable[[], nn.Module]) -> nn.Module:
    """Run ``build``; under an ambient meta device, inside ``host_index_math`` plus clean-up."""
    import torch

    device = torch.get_default_device()
    if device.type != "meta":
        return build()
    with host_index_math():
        module = build()
    _adopt_strays(module, device)
    return module


def _adopt_strays(module: nn.Module, device: Any) -> None:
    """Move parameters and buffers that are not on ``device`` onto it, one module at a time.

    Not ``module.to(device)``: ultralytics' ``_apply`` override would also move the head's
    ``stride`` values (host arithmetic, must stay readable) to meta.
    """
    from torch import nn

    for sub in module.modules():
        for name, param in list(sub.named_parameters(recurse=False)):
            if param.device != device:
                setattr(
                    sub, name, nn.Parameter(param.to(device), requires_grad=param.requires_grad)
                )
        for name, buf in list(sub.named_buffers(recurse=False)):
            if buf.device != device:
                setattr(sub, name, buf.to(device))


@contextlib.contextmanager
def host_index_math() -> Iterator[None]:
    """Within the block, ``torch.arange``/``torch.tensor`` without ``device=`` land on the CPU."""
    import torch
    from torch.overrides import TorchFunctionMode

    host_factories = {torch.arange, torch.tensor}

    class _HostIndexMath(TorchFunctionMode):
        def __torch_function__(
            self,
            func: Any,
            types: Any,
            args: tuple[Any, ...] = (),
            kwargs: dict[str, Any] | None = None,
        ) -> Any:
            kwargs = dict(kwargs or {})
            if func in host_factories and kwargs.get("device") is None:
                kwargs["device"] = "cpu"
            return func(*args, **kwargs)

    with _HostIndexMath():
        yield


class AllocationLimitExceeded(Exception):
    """A build on real tensors would allocate more than its budget; nothing beyond it was made."""

    def __init__(self, needed: int, limit: int) -> None:
        super().__init__(f"needs more than {needed} bytes (limit {limit})")
        self.needed = needed
        self.limit = limit


@contextlib.contextmanager
def allocation_budget(limit_bytes: int) -> Iterator[None]:
    """Within the block, refuse (before allocating) any factory op past ``limit_bytes`` in all.

    Guards a fallback build on the CPU: a builder that could not run on meta would otherwise
    allocate a 70B model in full before anyone could check its size. Factory ops (``empty``,
    ``zeros``, ``randn``, ... — how parameters come to be) are priced from their ``size``
    argument before they run; everything else a builder computes is transient.
    """
    from pytest_modelprof._compat import TorchDispatchMode

    class _Budget(TorchDispatchMode):  # type: ignore[no-untyped-call]
        def __init__(self) -> None:
            super().__init__()  # type: ignore[no-untyped-call]
            self.used = 0

        def __torch_dispatch__(
            self,
            func: Any,
            types: Any,
            args: tuple[Any, ...] = (),
            kwargs: dict[str, Any] | None = None,
        ) -> Any:
            kwargs = kwargs or {}
            if func.__name__.partition(".")[0] in _FACTORIES:
                self.used += _requested_bytes(func, args, kwargs)
                if self.used > limit_bytes:
                    raise AllocationLimitExceeded(self.used, limit_bytes)
            return func(*args, **kwargs)

    with _Budget():
        yield


_FACTORIES = frozenset({"empty", "empty_strided", "zeros", "ones", "full", "rand", "randn"})


def _requested_bytes(func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> int:
    """Bytes a factory op is about to allocate, from its ``size`` and ``dtype`` arguments."""
    import torch

    from pytest_modelprof._compat import op_schema

    names = [a.name for a in op_schema(func).arguments]
    size = kwargs.get("size", args[names.index("size")] if "size" in names else None)
    if not isinstance(size, (list, tuple)):
        return 0
    numel = 1
    for s in size:
        numel *= int(s)
    dtype = kwargs.get("dtype") or torch.get_default_dtype()
    return numel * torch.empty((), dtype=dtype, device="meta").element_size()
