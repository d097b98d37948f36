"""Model inputs as ``(args, kwargs)``, the stand-in training loss, and where a module lives.

Shared by the capture (profile.py) and the runtime measurements, so both read inputs alike.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, cast

import torch
from torch import nn

from pytest_modelprof.errors import ModelInputError, UsageError

__all__ = [
    "Inputs",
    "as_inputs",
    "backward",
    "call_model",
    "default_loss",
    "flat_tensors",
    "map_tensors",
    "module_device",
]

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
    raise UsageError(
        "inputs must be a tensor, a tuple of positional values, a dict of keyword values or "
        f"an (args, kwargs) pair, not {type(inputs).__name__}"
    )


def call_model(model: Callable[..., Any], inputs: Inputs) -> Any:
    """``model(*args, **kwargs)``."""
    args, kwargs = inputs
    return model(*args, **kwargs)


def flat_tensors(value: Any, out: list[torch.Tensor] | None = None) -> list[torch.Tensor]:
    """Every tensor in nested tuples, lists and dicts, in order (appended to ``out``)."""
    found = [] if out is None else out
    if isinstance(value, torch.Tensor):
        found.append(value)
    elif isinstance(value, (list, tuple)):
        for v in value:
            flat_tensors(v, found)
    elif isinstance(value, Mapping):
        for v in value.values():
            flat_tensors(v, found)
    return found


def map_tensors(value: Any, fn: Callable[[torch.Tensor], torch.Tensor]) -> Any:
    """``value`` with ``fn`` applied to every tensor in nested tuples, lists and dicts."""
    if isinstance(value, torch.Tensor):
        return fn(value)
    if isinstance(value, tuple):
        return tuple(map_tensors(v, fn) for v in value)
    if isinstance(value, list):
        return [map_tensors(v, fn) for v in value]
    if isinstance(value, Mapping):
        return {k: map_tensors(v, fn) for k, v in value.items()}
    return value


def default_loss(output: Any) -> torch.Tensor:
    """The sum of every floating-point output that requires grad (a stand-in training loss)."""
    tensors = [t for t in flat_tensors(output) if t.requires_grad and t.is_floating_point()]
    if not tensors:
        raise ModelInputError(
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
