"""The model and its inputs at one point of a sweep (shape axes resize, other axes rebuild)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final

import torch
from torch import nn

from pytest_modelprof._tensors import Inputs, as_inputs, flat_tensors, map_tensors
from pytest_modelprof.capture.run import real_copy
from pytest_modelprof.errors import ModelInputError, SettingsError
from pytest_modelprof.models import resolve

__all__ = ["SHAPE_AXES", "ModelArg", "SweepSubject", "input_shapes", "for_profile", "label_of"]

SHAPE_AXES: Final = ("batch", "seq_len", "input_size")

ModelArg = nn.Module | str | Callable[..., nn.Module]


def label_of(model: ModelArg, name: str | None) -> str:
    """The name a sweep reports: ``name``, a registry name, a class or a factory name."""
    if name is not None:
        return name
    if isinstance(model, str):
        return model
    if isinstance(model, nn.Module):
        return type(model).__name__
    return str(getattr(model, "__name__", "model"))


class SweepSubject:
    """Builds the model and its inputs at each point of a sweep."""

    def __init__(
        self,
        model: ModelArg,
        *,
        label: str,
        timed: bool,
        inputs: Any,
        input_shape: Sequence[int] | None,
        make_inputs: Callable[..., Any] | None,
        axis_dims: Mapping[str, int] | None,
        device: str | torch.device | None,
        dtype: torch.dtype | None,
        fixed: dict[str, Any],
    ) -> None:
        self.model = model
        self.inputs = inputs
        self.input_shape = input_shape
        self.make_inputs = make_inputs
        self.dims = dict(axis_dims or {})
        self.dtype = dtype
        self.fixed = fixed
        self.device = torch.device(device) if device is not None else torch.device("cpu")
        self.spec = None
        if isinstance(model, str):
            self.spec = resolve(model)
        # Timing runs the module: a user's module is timed as a copy, so the forward cannot
        # change it.
        self.timed: nn.Module | None = None
        if timed and isinstance(model, nn.Module):
            self.timed = real_copy(model, label, "the latency sweep")
        self._probes: dict[tuple[tuple[str, int], ...], nn.Module | None] = {}

    def build(self, arch: dict[str, int], shape: tuple[int, ...] | None) -> nn.Module:
        """The model at the architecture point ``arch`` (a given module as it is)."""
        model = self.model
        if isinstance(model, nn.Module):
            return self.timed if self.timed is not None else model
        with torch.device(self.device):
            if self.spec is not None:
                built: nn.Module = self.spec.build(input_shape=shape, **self.fixed, **arch)
            else:
                assert callable(model) and not isinstance(model, str)
                built = model(**self.fixed, **arch)
        return built.to(self.dtype) if self.dtype is not None else built

    def _probe(self, arch: dict[str, int]) -> nn.Module | None:
        # The inputs follow the model as built (--arch image_size=64), read from a meta build.
        assert self.spec is not None
        key = tuple(sorted(arch.items()))
        if key not in self._probes:
            self._probes[key] = self.spec.probe(**self.fixed, **arch)
        return self._probes[key]

    def inputs_at(self, point: dict[str, int]) -> Inputs:
        """The inputs at ``point``: ``make_inputs(**point)``, or the template resized."""
        if self.make_inputs is not None:
            return as_inputs(self.make_inputs(**point))
        shape_point = {k: v for k, v in point.items() if k in SHAPE_AXES}
        resized: Inputs = map_tensors(
            self._template(point), lambda t: _resize(t, shape_point, self.dims)
        )
        return resized

    def _template(self, point: dict[str, int]) -> Inputs:
        if self.inputs is not None:
            return as_inputs(self.inputs)
        if self.spec is not None:  # the registry knows the input kinds (token ids, images, ...)
            shape = tuple(self.input_shape) if self.input_shape is not None else None
            arch = {k: v for k, v in point.items() if k not in SHAPE_AXES}
            return self.spec.example_inputs(
                shape, device=self.device, dtype=self.dtype, module=self._probe(arch)
            )
        if self.input_shape is not None:
            x = torch.randn(tuple(self.input_shape), dtype=self.dtype, device=self.device)
            return (x,), {}
        raise SettingsError("give inputs=, input_shape= or make_inputs= to sweep a module")


def _resize(t: torch.Tensor, point: Mapping[str, int], dims: Mapping[str, int]) -> torch.Tensor:
    """``t`` with the swept dimensions set to ``point``'s values (new values, seeded)."""
    shape = list(t.shape)
    if "batch" in point and t.dim() >= 1:
        shape[dims.get("batch", 0)] = point["batch"]
    if "seq_len" in point and t.dim() >= 2:
        shape[dims.get("seq_len", 1)] = point["seq_len"]
    if "input_size" in point and t.dim() >= 3:
        spatial = 2 if t.dim() >= 4 else 1
        for d in range(t.dim() - spatial, t.dim()):
            shape[d] = point["input_size"]
    if shape == list(t.shape):
        return t
    gen = torch.Generator().manual_seed(0)
    if t.is_floating_point():
        return torch.randn(shape, generator=gen, dtype=t.dtype).to(t.device)
    if t.dtype == torch.bool:
        return torch.ones(shape, dtype=torch.bool, device=t.device)
    high = max(int(t.max().item()) + 1 if t.numel() else 2, 2)
    return torch.randint(0, high, shape, generator=gen, dtype=t.dtype).to(t.device)


def input_shapes(batch: Inputs) -> list[list[int]]:
    """The shape of every input tensor."""
    return [[int(s) for s in t.shape] for t in flat_tensors(batch)]


def for_profile(batch: Inputs) -> Any:
    """``profile_model`` takes positional inputs as a tuple or keyword inputs as a dict."""
    args, kwargs = batch
    if args and kwargs:
        raise ModelInputError(
            "profile_model() takes positional or keyword inputs, not both; return a tuple or a "
            "dict from make_inputs="
        )
    return dict(kwargs) if kwargs else tuple(args)
