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

__all__ = ["host_index_math", "meta_safe_build"]


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
