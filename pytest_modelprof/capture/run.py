"""One capture attempt in one mode: prepare the module, make inputs, trace, classify a failure.

A named model is built for the mode (on meta, or on the CPU for real tensors). A user's module
runs as a stand-in copy whose tensors are meta, fake or real clones — never the module itself.
The attempt runs in eval mode, or in train mode when it includes the backward pass (the graph a
training step runs). A failure leaves this module as :class:`CaptureFailed` carrying a
:class:`~pytest_modelprof.capture.classify.Failure`; the caller decides whether to fall back.
"""

from __future__ import annotations

import operator
import warnings
from collections.abc import Sequence
from contextlib import ExitStack
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import nn
from torch.nn.modules.lazy import LazyModuleMixin

from pytest_modelprof._compat import FakeTensorMode
from pytest_modelprof._tensors import (
    Inputs,
    as_inputs,
    backward,
    default_loss,
    flat_tensors,
    map_tensors,
    module_device,
)
from pytest_modelprof.capture import plan
from pytest_modelprof.capture.classify import Failure, classify, short
from pytest_modelprof.capture.kernels import value_checks_off
from pytest_modelprof.capture.leaks import GlobalScan, global_standins, python_random_states
from pytest_modelprof.capture.plan import (
    TRAINING_GRAPH_NOTE,
    Mode,
    Subject,
)
from pytest_modelprof.capture.record import Capture
from pytest_modelprof.capture.standin import (
    cloned_standins,
    empty_standins,
    fake_lazy_layers,
    random_standins,
    standin_copy,
    tensor_bytes,
)
from pytest_modelprof.capture.tracer import Tracer
from pytest_modelprof.costs.registry import CostRegistry
from pytest_modelprof.errors import (
    GlobalStateWarning,
    ModelBuildError,
    ModelInputError,
    ModelprofError,
)
from pytest_modelprof.models._meta import AllocationLimitExceeded, allocation_budget
from pytest_modelprof.models._spec import BUILD_NOTE
from pytest_modelprof.schema import CaptureMode
from pytest_modelprof.units import format_bytes

__all__ = ["Request", "Captured", "CaptureFailed", "run_once", "make_inputs", "build_real",
           "real_copy", "module_dtype", "input_shape_tuple", "BACKWARD_SCOPE"]

# Backward ops run outside any module's forward; they are reported under this pseudo-layer.
BACKWARD_SCOPE = "(backward)"

_META = torch.device("meta")
_CPU = torch.device("cpu")


@dataclass(frozen=True)
class Request:
    """What ``profile_model`` was asked for, resolved."""

    subject: Subject
    requested: Mode
    input_shape: tuple[int, ...] | None
    inputs: Any
    device: torch.device | None
    dtype: torch.dtype | None
    include_backward: bool
    warmup: bool | None
    registry: CostRegistry


@dataclass
class Captured:
    """A successful attempt: the capture, the module it ran (a copy or a build), its inputs."""

    capture: Capture
    module: nn.Module
    args: tuple[Any, ...]
    kwargs: dict[str, Any]
    run_device: torch.device
    notes: list[str] = field(default_factory=list)
    warmed: bool = False


class CaptureFailed(Exception):
    """An attempt failed; ``failure`` says why and whether another mode may succeed."""

    def __init__(self, failure: Failure, where: str, inputs: str) -> None:
        super().__init__(failure.text)
        self.failure = failure
        self.where = where  # "at layer 'conv1' (Conv2d)", "before any layer ran", ...
        self.inputs = inputs  # "(1, 3, 224, 224)"


def run_once(request: Request, mode: CaptureMode) -> Captured:
    """Capture ``request`` in ``mode``; raises :class:`CaptureFailed` or a ModelprofError."""
    source, notes = _source(request, mode)
    error: BaseException | None = None
    with ExitStack() as stack:
        stack.enter_context(torch.random.fork_rng(devices=_rng_devices(request, mode)))
        stack.enter_context(python_random_states())
        fake = FakeTensorMode(allow_non_fake_inputs=True) if mode == "fake" else None
        module, run_device, more = _standin(request, mode, source, fake)
        scan = GlobalScan(module) if mode != "real" else None
        if fake is not None:
            stack.enter_context(fake)
            stack.enter_context(fake_lazy_layers(module, fake, run_device))
        elif mode == "meta":
            # Tensors the forward creates without a device (masks, position ids) join the
            # meta tensors instead of landing on the CPU.
            stack.enter_context(torch.device("meta"))
        if mode != "real":
            stack.enter_context(value_checks_off())
        module.train(request.include_backward)
        args, kwargs = make_inputs(request, module, run_device)
        tracers: list[Tracer] = []
        try:
            tracer, warmed = _trace(request, module, args, kwargs, tracers)
        except ModelprofError:
            raise
        except Exception as exc:
            error = exc
    left = scan.left() if scan is not None else []
    if left:
        warnings.warn(global_standins(request.subject.label, mode, left), GlobalStateWarning, 2)
    if error is not None:
        inputs = flat_tensors([args, kwargs])
        failure = classify(error, mode, inputs, _probe_device(request, source))
        where = _where(tracers[-1], module) if tracers else "before any layer ran"
        raise CaptureFailed(failure, where, _describe(args, kwargs)) from error
    notes = notes + more
    if request.include_backward:
        notes.append(TRAINING_GRAPH_NOTE)
    if warmed:
        notes.append("after a warm-up forward")
    return Captured(tracer.finish(), module, args, kwargs, run_device, notes, warmed)


# -- the module for a mode --------------------------------------------------------------------


def _source(request: Request, mode: CaptureMode) -> tuple[nn.Module, list[str]]:
    """The user's module, or a fresh build of the name for ``mode`` (outside any mode)."""
    subject = request.subject
    if subject.module is not None:
        return subject.module, []
    if mode == "real":
        module = build_real(request, request.device)
        note: list[str] = []
    else:
        module, note = _build_meta(request)
    built = getattr(module, BUILD_NOTE, None)  # which of several classes a name built
    note = [*note, built] if isinstance(built, str) else note
    return (module.to(request.dtype) if request.dtype is not None else module), note


def _standin(
    request: Request, mode: CaptureMode, source: nn.Module, fake: Any
) -> tuple[nn.Module, torch.device, list[str]]:
    """The module the attempt runs: a copy of the user's module, or the build itself."""
    if request.subject.module is None:
        device = _META if mode == "meta" else request.device or _CPU
        if mode == "fake":
            return standin_copy(source, empty_standins(device, None, fake)), device, []
        return source, device, []
    on_meta = any(t.is_meta for t in (*source.parameters(), *source.buffers()))
    own = _CPU if on_meta else module_device(source)
    if mode == "meta":
        return standin_copy(source, empty_standins(_META, request.dtype)), _META, []
    if mode == "fake":
        device = request.device or own
        return standin_copy(source, empty_standins(device, request.dtype, fake)), device, []
    if on_meta:
        device = request.device or _CPU
        _check_real_size(request, tensor_bytes(source), device)
        copy = standin_copy(source, random_standins(device, request.dtype))
        return copy, device, ["random weights: the module lives on meta and has none"]
    if request.device is not None and request.device != own:
        raise ModelInputError(
            f"{request.subject.label}: the module is on {own}, not {request.device}; "
            "move it first (module.to(device)) or leave device= unset."
        )
    # Real tensors clone the user's weights: the copy doubles them, so auto checks its size.
    _check_real_size(request, tensor_bytes(source), own, copying=True)
    return standin_copy(source, cloned_standins(request.dtype)), own, []


def _check_real_size(
    request: Request, needed: int, device: torch.device, copying: bool = False
) -> None:
    limit = plan.REAL_FALLBACK_LIMIT_BYTES
    if request.requested == "real" or needed <= limit:
        return
    verb = "copy its" if copying else "allocate"
    raise ModelBuildError(
        f"{request.subject.label}: real tensors would {verb} {format_bytes(needed)} of "
        f"weights on {device}, more than the {format_bytes(limit)} that "
        "mode='auto' allocates on its own. Pass mode='real' to allow it."
    )


def real_copy(module: nn.Module, label: str, purpose: str) -> nn.Module:
    """A copy of a user's module with real clones of its tensors, for a measurement that runs it.

    Timing, the fvcore cross-check and compile health run this copy, never the module itself
    (a forward may cache into the module, a lazy layer materialise). The copy is refused above
    :data:`~pytest_modelprof.capture.plan.REAL_FALLBACK_LIMIT_BYTES` of weights.
    """
    needed = tensor_bytes(module)
    limit = plan.REAL_FALLBACK_LIMIT_BYTES
    if needed > limit:
        raise ModelBuildError(
            f"{label}: {purpose} runs a copy of the module (never the module itself), which "
            f"would copy {format_bytes(needed)} of weights on {module_device(module)}, more "
            f"than the {format_bytes(limit)} limit. Give the model by name "
            "(model='pkg.module:factory') so that it is built for the measurement instead, "
            "or drop the limit that asks for it."
        )
    return standin_copy(module, cloned_standins(None))


def _build_meta(request: Request) -> tuple[nn.Module, list[str]]:
    """Build on meta; a builder that reads tensor values is built on the CPU, size-checked."""
    spec = request.subject.spec
    assert spec is not None
    try:
        with torch.device("meta"):
            module: nn.Module = spec.build(
                input_shape=request.input_shape, **request.subject.arch_kwargs
            )
        return module, []
    except ModelprofError:
        raise
    except Exception as exc:  # construction reads values that meta tensors do not have
        why = short(exc)
    try:
        with allocation_budget(plan.REAL_FALLBACK_LIMIT_BYTES):
            module = build_real(request, None)
    except AllocationLimitExceeded as over:
        raise ModelBuildError(
            f"{request.subject.label}: building on meta failed ({why}); building on the CPU "
            f"instead needs more than {format_bytes(over.limit)} and was stopped before "
            "allocating it. Make the builder work under torch.device('meta'), or pass "
            "mode='real' to build it with real weights."
        ) from None
    return module.to("meta"), [f"built on CPU and moved to meta (construction reads values: {why})"]


def build_real(request: Request, device: torch.device | None) -> nn.Module:
    subject = request.subject
    spec = subject.spec
    assert spec is not None
    if request.requested != "real":
        needed = _meta_estimate(request)
        if needed is not None:
            _check_real_size(request, needed, device or _CPU)
    try:
        with torch.device(device or "cpu"):
            module: nn.Module = spec.build(
                input_shape=request.input_shape, **subject.arch_kwargs
            )
        return module
    except (ModelprofError, AllocationLimitExceeded):
        raise
    except Exception as exc:
        where = f" on {device}" if device is not None else ""
        hint = (
            f"Check the builder arguments ({subject.arch_kwargs})."
            if subject.arch_kwargs
            else "Is the device available? Run without device= to profile on meta tensors."
            if device is not None and device.type != "cpu"
            else "The model's builder itself failed."
        )
        raise ModelBuildError(
            f"{subject.label}: building the model{where} failed: {short(exc)}. {hint}"
        ) from exc


def _meta_estimate(request: Request) -> int | None:
    """Bytes of the model's weights, from a build on meta (None if it cannot build there)."""
    spec = request.subject.spec
    assert spec is not None
    try:
        with torch.device("meta"):
            module = spec.build(input_shape=request.input_shape, **request.subject.arch_kwargs)
    except Exception:
        return None
    if request.dtype is not None:
        module = module.to(request.dtype)
    return tensor_bytes(module)


def _rng_devices(request: Request, mode: CaptureMode) -> list[int]:
    device = request.device
    if mode == "real" and device is not None and device.type == "cuda":
        return [device.index if device.index is not None else torch.cuda.current_device()]
    return []


def _probe_device(request: Request, source: nn.Module) -> torch.device:
    """Where the run would execute for real (to test whether a real kernel accepts an op)."""
    if request.device is not None and request.device.type != "meta":
        return request.device
    own = module_device(source)
    return _CPU if own.type == "meta" else own


# -- inputs ----------------------------------------------------------------------------------


def module_dtype(module: nn.Module) -> torch.dtype:
    """The dtype of the first floating parameter (the default dtype if none)."""
    for t in module.parameters():
        if t.is_floating_point():
            return t.dtype
    return torch.get_default_dtype()


def make_inputs(request: Request, module: nn.Module, device: torch.device) -> Inputs:
    """The forward's ``(args, kwargs)`` on ``device``: given, from the shape, or the default."""
    subject = request.subject
    dtype = request.dtype or module_dtype(module)
    if request.inputs is not None:
        args, kwargs = as_inputs(request.inputs)

        def move(t: torch.Tensor) -> torch.Tensor:
            return t.to(device=device, dtype=dtype if t.is_floating_point() else t.dtype)

        return map_tensors(args, move), map_tensors(kwargs, move)
    if subject.spec is not None:
        made: Inputs = subject.spec.example_inputs(
            request.input_shape, device=device, dtype=dtype, module=module
        )
        return made
    if request.input_shape is None:
        raise ModelInputError(
            f"{subject.label}: no input given. Pass input_shape=(1, 3, 224, 224) for a single "
            "image-like tensor, or inputs=(tensor, ...) / inputs={'input_ids': tensor}."
        )
    return (torch.randn(request.input_shape, device=device, dtype=dtype),), {}


def _describe(args: tuple[Any, ...], kwargs: dict[str, Any]) -> str:
    parts = [str(tuple(t.shape)) for t in flat_tensors(args)]
    for k, v in kwargs.items():
        parts.extend(f"{k}={tuple(t.shape)}" for t in flat_tensors(v))
    return ", ".join(parts) or "no tensors"


# -- tracing ---------------------------------------------------------------------------------


def _trace(
    request: Request,
    module: nn.Module,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    tracers: list[Tracer],
) -> tuple[Tracer, bool]:
    """Trace one pass (forward, plus backward if asked); again if it initialised lazy state.

    ``warmup=None``: the first pass is kept unless it replaced module state (lazy
    initialisation, like YOLO's anchors); ``True`` always runs an untraced forward first, and
    so do modules with uninitialised (lazy) parameters, whose sizes are unknown until then.
    ``tracers`` receives each tracer made, the last one telling where a failure happened.
    """
    warmed = False
    if _has_lazy(module):
        with torch.no_grad():  # a tracer cannot even count parameters of unknown size yet
            module(*args, **kwargs)
        warmed = True
    elif request.warmup:
        warm = Tracer(module, request.registry)
        tracers.append(warm)  # tells which layer failed, records nothing
        with warm.tracing(record=False), torch.no_grad():
            module(*args, **kwargs)
        warmed = True
    tracer = Tracer(module, request.registry)
    tracers.append(tracer)
    while True:
        tracer.mark_inputs(list(args) + list(kwargs.values()))
        before = _state_snapshot(module) if request.warmup is None and not warmed else None
        with tracer.tracing():
            with torch.set_grad_enabled(request.include_backward):
                out = module(*args, **kwargs)
            tracer.mark_outputs(out)
            if request.include_backward:
                _backward(request, tracer, out)
        if before is not None and not _same_state(before, _state_snapshot(module)):
            warmed = True  # that pass was the warm-up
            tracer = Tracer(module, request.registry)
            tracers.append(tracer)
            continue
        return tracer, warmed


def _has_lazy(module: nn.Module) -> bool:
    return any(
        isinstance(m, LazyModuleMixin) and m.has_uninitialized_params() for m in module.modules()
    )


def _backward(request: Request, tracer: Tracer, out: Any) -> None:
    tracer.phase = "backward"
    tracer.push_scope(BACKWARD_SCOPE, "autograd")
    try:
        loss = default_loss(out)
    except ValueError:
        raise ModelInputError(
            f"{request.subject.label}: include_backward=True needs an output that requires "
            "grad; none of the outputs does."
        ) from None
    backward(loss)


def _where(tracer: Tracer, module: nn.Module) -> str:
    layer = tracer.failed_at
    if layer is None:
        return "before any layer ran"
    if layer == "":
        return f"in the model's own forward ({type(module).__name__})"
    return f"at layer {layer!r} ({tracer.capture.module_types.get(layer, '?')})"


def _state_snapshot(module: nn.Module) -> list[Any]:
    """The objects a module tree holds (attributes, parameters, buffers), by reference, flat.

    Holding the objects (not their ids) keeps them alive, so an id cannot be reused by a
    replacement; :func:`_same_state` compares by identity. An added or removed entry changes
    the length or shifts what follows.
    """
    snapshot: list[Any] = []
    for m in module.modules():
        attrs = m.__dict__
        snapshot.extend(attrs.values())
        snapshot.extend(attrs["_parameters"].values())
        snapshot.extend(attrs["_buffers"].values())
    return snapshot


def _same_state(a: list[Any], b: list[Any]) -> bool:
    """Did no attribute, parameter or buffer of any module get replaced or added?"""
    return len(a) == len(b) and all(map(operator.is_, a, b))


def input_shape_tuple(shape: Sequence[int] | None) -> tuple[int, ...] | None:
    """``input_shape`` as a tuple of ints (or None)."""
    return tuple(int(s) for s in shape) if shape is not None else None
