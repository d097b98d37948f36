"""What to profile and in which modes to try it, fastest exact mode first.

``auto`` tries meta tensors (nothing allocated), then fake tensors (data-dependent Python
checks such as transformers' attention masks often pass), then real tensors, for a model
given by name and for a module alike. A user's module always runs as a stand-in copy
(:mod:`pytest_modelprof.capture.standin`), never itself. Real tensors for a model that has no
weights of its own (built on meta, or by name) allocate its weights; ``auto`` refuses that
above :data:`REAL_FALLBACK_LIMIT_BYTES` and says how to proceed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import torch
from torch import nn

from pytest_modelprof.errors import SettingsError, UsageError
from pytest_modelprof.models import resolve
from pytest_modelprof.schema import CaptureMode

__all__ = [
    "Mode",
    "Subject",
    "make_subject",
    "plan_modes",
    "reason",
    "resolve_dtype",
    "REAL_FALLBACK_LIMIT_BYTES",
    "TRAINING_GRAPH_NOTE",
]

Mode = Literal["auto", "meta", "fake", "real"]

#: Weights ``auto`` may allocate to fall back to real tensors (explicit ``mode="real"``: any).
REAL_FALLBACK_LIMIT_BYTES = 2 * 2**30

#: Said in the capture's reason whenever ``include_backward=True``.
TRAINING_GRAPH_NOTE = (
    "training graph: train mode (dropout as in training, batch norm on batch statistics)"
)


@dataclass(frozen=True)
class Subject:
    """What is being profiled: a name to build, or a module the user handed us."""

    label: str
    module: nn.Module | None
    spec: Any | None  # pytest_modelprof.models.ModelSpec
    arch_kwargs: dict[str, Any]


def make_subject(model: nn.Module | str, name: str | None, arch_kwargs: dict[str, Any]) -> Subject:
    """Resolve a name through the model registry, or take a module as given."""
    if isinstance(model, str):
        spec = resolve(model)
        return Subject(name or spec.name, None, spec, arch_kwargs)
    if isinstance(model, nn.Module):
        if arch_kwargs:
            unknown = ", ".join(sorted(arch_kwargs))
            raise UsageError(f"profile_model() got unexpected keyword arguments: {unknown}")
        return Subject(name or type(model).__name__, model, None, {})
    raise UsageError(f"model must be an nn.Module or a model name, not {type(model).__name__}")


def plan_modes(mode: Mode, device: torch.device | None) -> list[CaptureMode]:
    """The modes to try in order: ``device="meta"`` forces meta; ``auto`` tries all three."""
    if device is not None and device.type == "meta":
        return ["meta"]
    if mode != "auto":
        return [mode]
    return ["meta", "fake", "real"]


def reason(mode: CaptureMode, requested: Mode, attempts: list[str], notes: list[str]) -> str:
    """One line: which tensors ran and why, then how the model was prepared."""
    failed = [a for a in attempts if ": skipped" not in a]
    if failed:
        why = f"fell back to {mode} tensors: " + failed[-1]
    elif requested != "auto":
        why = f"{mode} tensors, as requested"
    elif mode == "meta":
        why = "meta tensors: no weights or activations allocated"
    elif mode == "fake":
        why = "fake tensors: no weights or activations allocated"
    else:
        why = "real tensors"
    return "; ".join([why, *notes])


def resolve_dtype(dtype: torch.dtype | str | None) -> torch.dtype | None:
    """``torch.float16``, ``"float16"`` or ``"torch.float16"`` as a dtype."""
    if dtype is None or isinstance(dtype, torch.dtype):
        return dtype
    value = getattr(torch, str(dtype).removeprefix("torch."), None)
    if not isinstance(value, torch.dtype):
        raise SettingsError(f"unknown dtype {dtype!r}; use e.g. 'float32', 'float16', 'bfloat16'")
    return value

