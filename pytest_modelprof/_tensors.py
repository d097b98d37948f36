"""Model inputs as ``(args, kwargs)``, the stand-in training loss, and where a module lives.

Shared by the capture (profile.py) and the runtime measurements, so both read inputs alike.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, cast

import torch
from torch import nn

__all__ = ["Inputs", "as_inputs", "default_loss", "call_model", "module_device", "backward"]

Inputs = tuple[tuple[Any, ...], dict[str, Any]]


def as_inputs(inputs: Any) -> Inputs:
    """A tensor, a tuple/list of positional values, a dict of keywords, or ``(args, kwargs)``."""
    if isinstance(inputs, torch.Tensor):
        return (inputs,), {}
    if isinstance(inputs, Mapping):
        return (), dict(inputs)
    if (
        isinstance(inputs, tuple)
        and len(inputs) == 2
        and isinstance(inputs[0], tuple)
        and isinstance(inputs[1], dict)
    ):
        return inputs[0], dict(inputs[1])
    if isinstance(inputs, (tuple, list)):
        return tuple(inputs), {}
    raise TypeError(
        "inputs must be a tensor, a tuple of positional values, a dict of keyword values or "
        f"an (args, kwargs) pair, not {type(inputs).__name__}"
    )


def call_model(model: Callable[..., Any], inputs: Inputs) -> Any:
    """``model(*args, **kwargs)``."""
    args, kwargs = inputs
    return model(*args, **kwargs)


def default_loss(output: Any) -> torch.Tensor:
    """The sum of every floating-point output that requires grad (a stand-in training loss)."""
    tensors: list[torch.Tensor] = []

    def walk(value: Any) -> None:
        if isinstance(value, torch.Tensor):
            if value.requires_grad and value.is_floating_point():
                tensors.append(value)
        elif isinstance(value, (list, tuple)):
            for v in value:
                walk(v)
        elif isinstance(value, Mapping):
            for v in value.values():
                walk(v)

    walk(output)
    if not tensors:
        raise ValueError(
            "no output requires grad, so there is nothing to back-propagate; pass loss_fn= or "
            "check that the model has trainable parameters"
        )
    loss = tensors[0].float().sum()
    for t in tensors[1:]:
        loss = loss + t.float().sum()
    return loss


def module_device(model: nn.Module) -> torch.device:
    """The device of the first parameter or buffer (CPU for a stateless module)."""
    for p in model.parameters():
        return p.device
    for b in model.buffers():
        return b.device
    return torch.device("cpu")


def backward(loss: torch.Tensor) -> None:
    """``loss.backward()`` (untyped upstream; one cast here keeps callers strict)."""
    cast(Any, loss).backward()
