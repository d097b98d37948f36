"""Model registry: turn a name into a buildable ``nn.Module`` with example inputs.

>>> spec = resolve("resnet50")              # torchvision, random weights
>>> spec = resolve("yolov8n.yaml")          # ultralytics config (extra: pytest-modelprof[yolo])
>>> spec = resolve("timm:convnext_tiny")     # any timm.list_models() name (extra: [timm])
>>> spec = resolve("hf:llama")               # transformers config class, random init (extra: [hf])
>>> spec = resolve("my_pkg.nets:make_net")  # import path
>>> module = spec.build()                   # eval() mode, on the ambient default device
>>> args, kwargs = spec.example_inputs(device="meta")

Importing this package imports neither torch, torchvision, ultralytics, timm nor transformers.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from pytest_modelprof.models._hf import DEFAULT_SEQ_LEN
from pytest_modelprof.models._registry import (
    ENTRY_POINT_GROUP,
    DuplicateModelError,
    Registry,
    default_registry,
)
from pytest_modelprof.models._spec import TOKEN_KINDS, InputKind, ModelSpec, Shape, Source
from pytest_modelprof.models._torchvision import Reference, torchvision_references

__all__ = [
    "DEFAULT_SEQ_LEN",
    "ENTRY_POINT_GROUP",
    "DuplicateModelError",
    "InputKind",
    "ModelSpec",
    "Reference",
    "Registry",
    "Shape",
    "Source",
    "TOKEN_KINDS",
    "default_registry",
    "list_models",
    "register_model",
    "resolve",
    "torchvision_references",
]

F = TypeVar("F", bound=Callable[..., Any])


def resolve(name: str) -> ModelSpec:
    """Resolve ``name`` through the default registry (see ``Registry.resolve``)."""
    return default_registry.resolve(name)


def list_models(filter: str | None = None) -> dict[str, list[str]]:
    """Every known name grouped by source, sorted; ``filter`` is a case-insensitive substring."""
    return default_registry.list_models(filter)


def register_model(
    name: str,
    *,
    input_shape: Shape | None = None,
    input_kind: InputKind = "tensor",
    arch_kwargs: Mapping[str, Any] | None = None,
    vocab_size: int = 32_000,
) -> Callable[[F], F]:
    """Decorator registering a model factory in the default registry under ``name``.

    >>> @register_model("my_net", input_shape=(1, 3, 64, 64))
    ... def make_my_net(width: int = 32) -> nn.Module: ...
    """
    return default_registry.register_model(
        name,
        input_shape=input_shape,
        input_kind=input_kind,
        arch_kwargs=arch_kwargs,
        vocab_size=vocab_size,
    )
