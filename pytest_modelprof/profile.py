"""``profile_model``: plan the modes, capture once per mode until one works, roll up a profile.

The pieces live in :mod:`pytest_modelprof.capture`: ``plan`` (which modes, in which order),
``run`` (one attempt: the module for the mode, its inputs, the trace), ``classify`` (why an
attempt failed) and ``standin`` (the copy a user's module runs as, so it is never touched).
"""

from __future__ import annotations

import gc
import platform
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from pytest_modelprof._tensors import flat_tensors
from pytest_modelprof.analysis import rollup
from pytest_modelprof.analysis.partition import partition
from pytest_modelprof.capture.kernels import canonical_kernels
from pytest_modelprof.capture.plan import (
    Mode,
    Subject,
    make_subject,
    plan_modes,
    reason,
    resolve_dtype,
)
from pytest_modelprof.capture.real import real_model_and_inputs
from pytest_modelprof.capture.record import Capture
from pytest_modelprof.capture.run import (
    BACKWARD_SCOPE,
    Captured,
    CaptureFailed,
    Request,
    input_shape_tuple,
    module_dtype,
    run_once,
)
from pytest_modelprof.capture.tracer import tensor_meta
from pytest_modelprof.costs.registry import CostRegistry
from pytest_modelprof.costs.user import REGISTER_HINT, active_registry
from pytest_modelprof.errors import (
    ModelBuildError,
    ModelForwardError,
    ModelInputError,
    ModelprofError,
    UncountedOpsError,
)
from pytest_modelprof.machines import Machine, resolve_machine
from pytest_modelprof.schema import (
    CaptureInfo,
    CaptureMode,
    Environment,
    ModelProfile,
    TensorSpec,
)

__all__ = [
    "profile_model",
    "profile_with_capture",
    "Profiled",
    "real_model_and_inputs",
    "canonical_kernels",
    "Mode",
    "BACKWARD_SCOPE",
]


@dataclass(frozen=True)
class Profiled:
    """A profile made in this process and the op-level capture it was computed from.

    The capture stays in memory (the partitioner, graph exports, the module tree and GPU-time
    predictions read it); the profile is the document files keep, which holds no capture."""

    profile: ModelProfile
    capture: Capture


def profile_model(
    model: nn.Module | str,
    *,
    input_shape: Sequence[int] | None = None,
    inputs: Any = None,
    device: str | torch.device | None = None,
    dtype: torch.dtype | str | None = None,
    mode: Mode = "auto",
    include_backward: bool = False,
    fail_on_uncounted: bool = False,
    machine: str | float | Machine | None = None,
    warmup: bool | None = None,
    name: str | None = None,
    registry: CostRegistry | None = None,
    **arch_kwargs: Any,
) -> ModelProfile:
    """Profile ``model`` (an ``nn.Module`` or a registry name) with one dispatch-level capture.

    ``mode="auto"`` tries meta tensors, then fake tensors, then real ones, falling back only
    when a mode cannot run the model (data-dependent code); the profile's ``capture`` says which
    ran and why. A module is never changed: the capture runs a copy of it. ``device="meta"``
    forces meta. ``include_backward=True`` profiles the training graph (train mode) forward and
    backward. ``warmup=None`` captures again when the first forward initialised lazy state;
    ``True`` always runs a warm-up forward first, ``False`` never. Extra keyword arguments go
    to the model builder. :func:`profile_with_capture` also gives the op-level capture.
    """
    return profile_with_capture(
        model, input_shape=input_shape, inputs=inputs, device=device, dtype=dtype, mode=mode,
        include_backward=include_backward, fail_on_uncounted=fail_on_uncounted, machine=machine,
        warmup=warmup, name=name, registry=registry, **arch_kwargs,
    ).profile


def profile_with_capture(
    model: nn.Module | str,
    *,
    input_shape: Sequence[int] | None = None,
    inputs: Any = None,
    device: str | torch.device | None = None,
    dtype: torch.dtype | str | None = None,
    mode: Mode = "auto",
    include_backward: bool = False,
    fail_on_uncounted: bool = False,
    machine: str | float | Machine | None = None,
    warmup: bool | None = None,
    name: str | None = None,
    registry: CostRegistry | None = None,
    **arch_kwargs: Any,
) -> Profiled:
    """:func:`profile_model`, with the op-level capture beside the profile."""
    subject = make_subject(model, name, arch_kwargs)
    real_device = torch.device(device) if device is not None else None
    request = Request(
        subject=subject,
        requested=mode,
        input_shape=input_shape_tuple(input_shape),
        inputs=inputs,
        device=real_device,
        dtype=resolve_dtype(dtype),
        include_backward=include_backward,
        warmup=warmup,
        registry=registry if registry is not None else active_registry(),
    )
    with _gc_paused():
        captured, capture_mode, attempts = _first_that_works(request, plan_modes(mode, real_device))
        info = CaptureInfo(
            mode=capture_mode,
            requested=mode if device is None else f"{mode}, device={device}",
            reason=reason(capture_mode, mode, attempts, captured.notes),
            attempts=attempts,
            warmup=captured.warmed,
        )
        profiled = _to_profile(subject, captured, info, resolve_machine(machine), include_backward)
    profile = profiled.profile
    if fail_on_uncounted and profile.uncounted_ops:
        listing = ", ".join(f"{u.op} x{u.count}" for u in profile.uncounted_ops)
        raise UncountedOpsError(
            f"{subject.label}: ops without a cost formula ran: {listing}; {REGISTER_HINT}, or "
            "run without fail_on_uncounted=True to record them only."
        )
    return profiled


def _first_that_works(
    request: Request, plan: list[CaptureMode]
) -> tuple[Captured, CaptureMode, list[str]]:
    """Run the plan; a mode's limitation moves on to the next, any other failure is final."""
    attempts: list[str] = []
    skip_fake = False
    for i, mode in enumerate(plan):
        if mode == "fake" and skip_fake and i + 1 < len(plan):
            attempts.append("fake: skipped (fake tensors would fail the same way)")
            continue
        try:
            with canonical_kernels():
                return run_once(request, mode), mode, attempts
        except ModelBuildError as refused:
            if not attempts:
                raise
            hint = (
                " Or pass mode='fake': fake tensors run this model without its weights."
                if _fake_runs(request, attempts)
                else ""
            )
            raise ModelBuildError(
                f"{str(refused).removesuffix('.')} (tried before: {'; '.join(attempts)}).{hint}"
            ) from refused
        except CaptureFailed as failed:
            f = failed.failure
            where = f" ({f.op})" if f.op else ""
            if f.kind != "limitation" or i + 1 == len(plan):
                raise _final_error(request, failed, mode, attempts) from failed.__cause__
            attempts.append(f"{mode}: {f.text} {failed.where}{where}")
            skip_fake = f.fake_cannot_help
    raise AssertionError("unreachable: a plan has at least one mode")  # pragma: no cover


def _fake_runs(request: Request, attempts: list[str]) -> bool:
    """Whether fake tensors capture the model: from the record when fake ran, else tried now.

    A hint must suggest only what works; this runs on the way to an error only.
    """
    if any(a.startswith("fake:") and ": skipped" not in a for a in attempts):
        return False  # it ran and failed
    try:
        with canonical_kernels():
            run_once(request, "fake")
    except Exception:
        return False
    return True


def _final_error(
    request: Request, failed: CaptureFailed, mode: CaptureMode, attempts: list[str]
) -> ModelprofError:
    """The error to raise for a failure that ends the plan, in words that say what to do."""
    label = request.subject.label
    f = failed.failure
    tried = f" (tried before: {'; '.join(attempts)})" if attempts else ""
    source = f" [{f.source}]" if f.source else ""
    op = f" in {f.op}" if f.op else ""
    if f.kind == "model":
        return ModelForwardError(
            f"{label}: the model's forward raised {f.text} {failed.where}{source}. This is the "
            f"model's own error, not pytest-modelprof's; the input was {failed.inputs}.{tried}"
        )
    if f.kind == "engine":
        return ModelprofError(
            f"{label}: pytest-modelprof cannot capture this model {failed.where}{op}: "
            f"{f.text}{source}. This is a limitation or bug of pytest-modelprof, not of the "
            "model or its input; please report it."
        )
    if f.kind == "limitation":
        hint = (
            " Try mode='fake': fake tensors run this model without its weights."
            if mode == "meta" and _fake_runs(request, attempts)
            else " Try mode='real' on a machine that holds the model."
            if mode in ("meta", "fake")
            else ""
        )
        return ModelprofError(
            f"{label}: could not be profiled in {mode} mode: {f.text} {failed.where}{op}"
            f"{source}.{tried}{hint}"
        )
    spec = request.subject.spec
    default = (
        f" (default {spec.default_input_shape})"
        if spec is not None and spec.default_input_shape
        else ""
    )
    if f.at_input:
        return ModelInputError(
            f"{label} rejected input {failed.inputs} {failed.where}: {f.text}{source}. "
            f"Check input_shape=/inputs= against what the model expects{default}.{tried}"
        )
    return ModelInputError(
        f"{label} failed on input {failed.inputs} {failed.where}{op}: {f.text}{source}. "
        f"If the input is not what the model expects{default}, fix input_shape=/inputs=; "
        f"otherwise the model itself is inconsistent at that layer.{tried}"
    )


@contextmanager
def _gc_paused() -> Iterator[None]:
    """No cyclic garbage collection during a capture.

    A capture and its roll-up allocate a few objects per op and free few of them, so the
    collector runs often and each full pass walks every object the process holds (the user's
    model, the test session): 10-15 % of a resnet50 capture on meta. Nothing here makes cycles
    that must be collected before it ends; collection resumes afterwards.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


# -- assembling the profile --------------------------------------------------------------------


def _input_specs(args: tuple[Any, ...], kwargs: dict[str, Any]) -> list[TensorSpec]:
    named: list[tuple[str | None, torch.Tensor]] = [(None, t) for t in flat_tensors(args)]
    for k, v in kwargs.items():
        named.extend((k, t) for t in flat_tensors(v))
    specs: list[TensorSpec] = []
    for name, t in named:
        m = tensor_meta(t)
        specs.append(TensorSpec(name=name, shape=list(m.shape), dtype=m.dtype))
    return specs


def _to_profile(
    subject: Subject,
    captured: Captured,
    info: CaptureInfo,
    machine: Machine,
    include_backward: bool,
) -> Profiled:
    capture, module = captured.capture, captured.module
    params = list({id(p): p for p in module.parameters()}.values())
    buffers = list({id(b): b for b in module.buffers()}.values())
    t = rollup.totals(capture.ops)
    env = Environment(
        torch_version=torch.__version__.split("+")[0],
        python_version=platform.python_version(),
        platform=sys.platform,
        device=str(captured.run_device),
        dtype=str(module_dtype(module)).removeprefix("torch."),
    )
    profile = ModelProfile(
        model=subject.label,
        inputs=_input_specs(captured.args, captured.kwargs),
        capture=info,
        environment=env,
        machine=machine,
        include_backward=include_backward,
        total_flops=t.flops,
        total_macs=t.macs,
        backward_flops=t.backward_flops,
        backward_macs=t.backward_macs,
        total_params=sum(p.numel() for p in params),
        param_bytes=sum(p.numel() * p.element_size() for p in params),
        buffer_bytes=sum(b.numel() * b.element_size() for b in buffers),
        activation_bytes=capture.activation_bytes,
        total_traffic=t.memory,
        peak_activation_bytes=capture.peak_activation_bytes,
        arithmetic_intensity=rollup.arithmetic_intensity(t.flops, t.memory),
        num_ops=sum(1 for op in capture.ops if not op.is_view),
        op_breakdown=rollup.family_breakdown(capture.ops),
        layers=rollup.layer_rows(capture, machine),
        op_calls=rollup.op_calls(capture),
        uncounted_ops=rollup.uncounted(capture.ops),
        uncalled_modules=capture.uncalled_modules,
        partition=partition(capture, machine).summary(),
    )
    return Profiled(profile, capture)
