"""The model as it runs on real tensors, with its inputs: what every real measurement runs.

Timing, the fvcore cross-check, compile health and the graph export use it; it sits below
:mod:`pytest_modelprof.profile` (which re-exports it) so they need not import the engine.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
from torch import nn

from pytest_modelprof._tensors import Inputs, module_device
from pytest_modelprof.capture.plan import make_subject, resolve_dtype
from pytest_modelprof.capture.run import (
    Request,
    build_real,
    input_shape_tuple,
    make_inputs,
    real_copy,
)
from pytest_modelprof.costs import default_registry

__all__ = ["real_model_and_inputs"]


def real_model_and_inputs(
    model: nn.Module | str,
    *,
    input_shape: Sequence[int] | None = None,
    inputs: Any = None,
    device: str | torch.device | None = None,
    dtype: torch.dtype | str | None = None,
    purpose: str = "the measurement",
    **arch_kwargs: Any,
) -> tuple[nn.Module, Inputs]:
    """The model as it runs on real tensors, and its inputs as ``(args, kwargs)``.

    A name is built with random weights on ``device`` (default: the CPU); a module is copied
    with its weights (:func:`~pytest_modelprof.capture.run.real_copy`, size-checked; ``purpose``
    names the measurement in its error), so what runs it never changes the user's module.
    Inputs come from ``inputs``, else ``input_shape``, else the registry's default for a name:
    the same resolution ``profile_model`` uses, for timing and cross-checks.
    """
    subject = make_subject(model, None, arch_kwargs)
    real_device = torch.device(device) if device is not None else None
    request = Request(
        subject=subject,
        requested="real",
        input_shape=input_shape_tuple(input_shape),
        inputs=inputs,
        device=real_device,
        dtype=resolve_dtype(dtype),
        include_backward=False,
        warmup=None,
        registry=default_registry(),
    )
    if subject.module is not None:
        module = real_copy(subject.module, subject.label, purpose)
    else:
        module = build_real(request, real_device)
        if request.dtype is not None:
            module = module.to(request.dtype)
    run_device = real_device or module_device(module)
    return module, make_inputs(request, module, run_device)
