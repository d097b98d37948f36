"""``profile_model``: resolve, pick meta/fake/real tensors, capture once, roll up a profile."""

from __future__ import annotations

import platform
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from typing import Any, Literal

import torch
from torch import nn

from pytest_modelprof._compat import FakeTensorMode, fake_fallback_errors
from pytest_modelprof._tensors import (
    Inputs,
    as_inputs,
    backward,
    default_loss,
    flat_tensors,
    map_tensors,
    module_device,
)
from pytest_modelprof.analysis import rollup
from pytest_modelprof.analysis.partition import partition
from pytest_modelprof.capture.tracer import Tracer, tensor_meta
from pytest_modelprof.costs import default_registry
from pytest_modelprof.costs.registry import CostRegistry
from pytest_modelprof.errors import (
    ModelBuildError,
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

__all__ = ["profile_model", "real_model_and_inputs", "canonical_kernels", "Mode", "BACKWARD_SCOPE"]

Mode = Literal["auto", "meta", "fake", "real"]

# Backward ops run outside any module's forward; they are reported under this pseudo-layer.
BACKWARD_SCOPE = "(backward)"



class _NeedsData(Exception):
    """This capture mode cannot run the model; try the next one."""


@dataclass
class _Subject:
    """What is being profiled: a name to build, or a module the user handed us."""

    label: str
    module: nn.Module | None
    spec: Any | None  # pytest_modelprof.models.ModelSpec
    arch_kwargs: dict[str, Any]


def profile_model(
    model: nn.Module | str,
    *,
    input_shape: Sequence[int] | None = None,
    inputs: Any = None,
    device: str | torch.device | None = None,
    dtype: torch.dtype | str | None = None,
    mode: Mode = "auto",
    include_backward: bool = False,
    strict: bool = False,
    machine: str | float | Machine | None = None,
    warmup: bool | None = None,
    name: str | None = None,
    registry: CostRegistry | None = None,
    **arch_kwargs: Any,
) -> ModelProfile:
    """Profile ``model`` (an ``nn.Module`` or a registry name) with one dispatch-level capture.

    ``mode="auto"`` runs on meta tensors for names and on fake tensors for modules, and falls
    back to real execution when the model needs data (the profile's ``capture`` says which and
    why). ``device="meta"`` forces meta. ``warmup=None`` captures again when the first forward
    initialised lazy state; ``True`` always runs a warm-up forward first, ``False`` never.
    Extra keyword arguments go to the model builder.
    """
    subject = _subject(model, name, arch_kwargs)
    reg = registry or default_registry()
    mach = resolve_machine(machine)
    torch_dtype = _dtype(dtype)
    real_device = torch.device(device) if device is not None else None
    plan = _plan(subject, mode, real_device)
    attempts: list[str] = []
    for capture_mode in plan:
        try:
            with canonical_kernels():
                result = _capture(
                    subject,
                    capture_mode,
                    input_shape,
                    inputs,
                    real_device,
                    torch_dtype,
                    include_backward,
                    warmup,
                    reg,
                )
        except _NeedsData as exc:
            attempts.append(f"{capture_mode}: {exc}")
            continue
        capture, module, args, kwargs, build_note = result
        reason = _reason(capture_mode, mode, attempts, build_note)
        info = CaptureInfo(
            mode=capture_mode,
            requested=mode if device is None else f"{mode}, device={device}",
            reason=reason,
            attempts=attempts,
            warmup="warm-up" in build_note,
        )
        profile = _to_profile(
            subject,
            capture,
            module,
            args,
            kwargs,
            info,
            mach,
            include_backward,
            capture_mode,
            real_device,
        )
        if strict and profile.uncounted_ops:
            listing = ", ".join(f"{u.op} x{u.count}" for u in profile.uncounted_ops)
            raise UncountedOpsError(
                f"{subject.label}: ops without a cost formula ran: {listing}. Register a formula "
                "(pytest_modelprof.costs) or run without strict=True to record them only."
            )
        return profile
    raise ModelprofError(
        f"{subject.label}: could not be profiled in any mode ({'; '.join(attempts)})"
    )


def real_model_and_inputs(
    model: nn.Module | str,
    *,
    input_shape: Sequence[int] | None = None,
    inputs: Any = None,
    device: str | torch.device | None = None,
    dtype: torch.dtype | str | None = None,
    **arch_kwargs: Any,
) -> tuple[nn.Module, Inputs]:
    """The model as it runs on real tensors, and its inputs as ``(args, kwargs)``.

    A name is built with random weights on ``device`` (default: the CPU); a module is used as
    given. Inputs come from ``inputs``, else ``input_shape``, else the registry's default for a
    name: the same resolution :func:`profile_model` uses, for timing and cross-checks.
    """
    subject = _subject(model, None, arch_kwargs)
    real_device = torch.device(device) if device is not None else None
    torch_dtype = _dtype(dtype)
    if subject.module is not None:
        module = subject.module
    else:
        module, _ = _build(subject, "real", input_shape, real_device, torch_dtype)
    run_device = real_device or module_device(module)
    run_dtype = torch_dtype or _module_dtype(module)
    return module, _make_inputs(subject, module, input_shape, inputs, run_device, run_dtype)


# -- planning -------------------------------------------------------------------------------


def _subject(model: nn.Module | str, name: str | None, arch_kwargs: dict[str, Any]) -> _Subject:
    if isinstance(model, str):
        from pytest_modelprof.models import resolve

        spec = resolve(model)
        return _Subject(name or spec.name, None, spec, arch_kwargs)
    if isinstance(model, nn.Module):
        if arch_kwargs:
            unknown = ", ".join(sorted(arch_kwargs))
            raise TypeError(f"profile_model() got unexpected keyword arguments: {unknown}")
        return _Subject(name or type(model).__name__, model, None, {})
    raise TypeError(f"model must be an nn.Module or a model name, not {type(model).__name__}")


def _plan(subject: _Subject, mode: Mode, device: torch.device | None) -> list[CaptureMode]:
    if device is not None and device.type == "meta":
        return ["meta"]
    if mode != "auto":
        return [mode]
    if subject.module is not None:
        on_meta = any(p.is_meta for p in subject.module.parameters())
        return ["meta"] if on_meta else ["fake", "real"]
    return ["meta", "real"]


def _reason(mode: CaptureMode, requested: Mode, attempts: list[str], note: str) -> str:
    if attempts:
        why = f"fell back to {mode} tensors: " + attempts[-1]
    elif requested != "auto":
        why = f"{mode} tensors, as requested"
    elif mode == "meta":
        why = "meta tensors: no weights or activations allocated"
    elif mode == "fake":
        why = "fake tensors over the module's own weights: no activations allocated"
    else:
        why = "real tensors"
    return f"{why}; {note}" if note else why


def _dtype(dtype: torch.dtype | str | None) -> torch.dtype | None:
    if dtype is None or isinstance(dtype, torch.dtype):
        return dtype
    value = getattr(torch, str(dtype).removeprefix("torch."), None)
    if not isinstance(value, torch.dtype):
        raise ValueError(f"unknown dtype {dtype!r}; use e.g. 'float32', 'float16', 'bfloat16'")
    return value


# -- the capture ------------------------------------------------------------------------------


@contextmanager
def canonical_kernels() -> Iterator[None]:
    """Make the op sequence independent of device and grad mode.

    The nn.MultiheadAttention/TransformerEncoderLayer fast path and the fused SDPA kernels are
    chosen differently on CPU, CUDA and meta, and only under no_grad. Routing attention through
    the reference (math) decomposition gives the same ops, hence the same counts, everywhere.
    """
    from torch.nn.attention import SDPBackend, sdpa_kernel

    previous = torch.backends.mha.get_fastpath_enabled()
    torch.backends.mha.set_fastpath_enabled(False)
    try:
        with sdpa_kernel([SDPBackend.MATH]):
            yield
    finally:
        torch.backends.mha.set_fastpath_enabled(previous)


@contextmanager
def _eval_mode(module: nn.Module) -> Iterator[None]:
    flags = [(m, m.training) for m in module.modules()]
    module.eval()
    try:
        yield
    finally:
        for m, was in flags:
            m.training = was


def _is_data_dependent(exc: BaseException, mode: CaptureMode) -> bool:
    if mode == "fake" and isinstance(exc, fake_fallback_errors()):
        return True
    if isinstance(exc, NotImplementedError):
        return True
    text = str(exc).lower()
    markers = (
        "meta tensor",
        "meta device",
        "data-dependent",
        "data dependent",
        "'meta' backend",
        "fake tensor",
        "faketensor",
        "cannot copy out of meta",
        "item() cannot",
    )
    return any(m in text for m in markers)


def _build(
    subject: _Subject,
    mode: CaptureMode,
    input_shape: Sequence[int] | None,
    device: torch.device | None,
    dtype: torch.dtype | None,
) -> tuple[nn.Module, str]:
    """Build a named model for ``mode``; returns the module and a note on how it was built."""
    spec = subject.spec
    assert spec is not None
    shape = tuple(input_shape) if input_shape is not None else None
    note = ""
    if mode == "meta":
        try:
            with torch.device("meta"):
                module = spec.build(input_shape=shape, **subject.arch_kwargs)
        except ModelprofError:
            raise
        except Exception as exc:  # construction reads tensor values (RegNet's width rounding)
            module = _build_real(subject, shape, None).to("meta")
            note = f"built on CPU and moved to meta (construction reads values: {_short(exc)})"
    else:
        module = _build_real(subject, shape, device)
    if dtype is not None:
        module = module.to(dtype)
    return module, note


def _build_real(
    subject: _Subject, shape: tuple[int, ...] | None, device: torch.device | None
) -> nn.Module:
    spec = subject.spec
    assert spec is not None
    try:
        with torch.device(device or "cpu"):
            module: nn.Module = spec.build(input_shape=shape, **subject.arch_kwargs)
        return module
    except ModelprofError:
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
            f"{subject.label}: building the model{where} failed: {_short(exc)}. {hint}"
        ) from exc


def _short(exc: BaseException, limit: int = 300) -> str:
    text = f"{type(exc).__name__}: {str(exc).strip().splitlines()[0] if str(exc).strip() else ''}"
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _module_dtype(module: nn.Module) -> torch.dtype:
    for t in module.parameters():
        if t.is_floating_point():
            return t.dtype
    return torch.get_default_dtype()


def _make_inputs(
    subject: _Subject,
    module: nn.Module,
    input_shape: Sequence[int] | None,
    inputs: Any,
    device: torch.device,
    dtype: torch.dtype,
) -> Inputs:
    if inputs is not None:
        args, kwargs = as_inputs(inputs)

        def move(t: torch.Tensor) -> torch.Tensor:
            target_dtype = dtype if t.is_floating_point() else t.dtype
            return t.to(device=device, dtype=target_dtype)

        return map_tensors(args, move), map_tensors(kwargs, move)
    if subject.spec is not None:
        shape = tuple(input_shape) if input_shape is not None else None
        made: Inputs = subject.spec.example_inputs(shape, device=device, dtype=dtype)
        return made
    if input_shape is None:
        raise ModelInputError(
            f"{subject.label}: no input given. Pass input_shape=(1, 3, 224, 224) for a single "
            "image-like tensor, or inputs=(tensor, ...) / inputs={'input_ids': tensor}."
        )
    return (torch.randn(tuple(int(s) for s in input_shape), device=device, dtype=dtype),), {}


def _describe_inputs(args: tuple[Any, ...], kwargs: dict[str, Any]) -> str:
    parts = [str(tuple(t.shape)) for t in flat_tensors(args)]
    for k, v in kwargs.items():
        parts.extend(f"{k}={tuple(t.shape)}" for t in flat_tensors(v))
    return ", ".join(parts) or "no tensors"


def _capture(
    subject: _Subject,
    mode: CaptureMode,
    input_shape: Sequence[int] | None,
    inputs: Any,
    device: torch.device | None,
    dtype: torch.dtype | None,
    include_backward: bool,
    warmup: bool | None,
    registry: CostRegistry,
) -> tuple[Any, nn.Module, tuple[Any, ...], dict[str, Any], str]:
    note = ""
    with ExitStack() as stack:
        if subject.module is not None:
            module = subject.module
            if dtype is not None and dtype != _module_dtype(module) and mode == "real":
                import copy

                module = copy.deepcopy(module).to(dtype)
                note = f"a copy of the module was cast to {dtype}"
        else:
            try:
                module, note = _build(subject, mode, input_shape, device, dtype)
            except ModelBuildError:
                raise
        run_dtype = dtype or _module_dtype(module)
        if mode == "meta":
            run_device = torch.device("meta")
        elif mode == "fake":
            run_device = device or module_device(module)
        else:
            run_device = device or module_device(module)
            if subject.module is not None and run_device != module_device(module):
                raise ModelInputError(
                    f"{subject.label}: the module is on {module_device(module)}, "
                    f"not {run_device}; "
                    "move it first (module.to(device)) or leave device= unset."
                )

        forward: Callable[..., Any] = module
        if (
            mode == "meta"
            and subject.module is not None
            and not any(p.is_meta for p in module.parameters())
        ):
            # Profile a real module on meta without touching (or copying) its weights.
            from torch.func import functional_call

            swapped = {
                k: torch.empty_like(
                    v, device="meta", dtype=(dtype or v.dtype) if v.is_floating_point() else v.dtype
                ).requires_grad_(v.requires_grad)
                for k, v in {
                    **dict(module.named_parameters()),
                    **dict(module.named_buffers()),
                }.items()
            }

            def forward(*a: Any, **kw: Any) -> Any:
                return functional_call(module, swapped, a, kw)

        if mode == "fake":
            fake = FakeTensorMode(allow_non_fake_inputs=True)
            stack.enter_context(fake)
        elif mode == "meta":
            # Tensors the forward creates without a device (masks, position ids) join the
            # meta tensors instead of landing on the CPU.
            stack.enter_context(torch.device("meta"))
        stack.enter_context(_eval_mode(module))
        args, kwargs = _make_inputs(subject, module, input_shape, inputs, run_device, run_dtype)
        # warmup=None: capture once and capture again only if that forward changed module
        # state (lazy initialisation, like YOLO's anchors), so most models need a single pass.
        warmed = False
        tracer = Tracer(module, registry)
        try:
            if warmup:
                with tracer.tracing(record=False), torch.no_grad():
                    forward(*args, **kwargs)
                warmed = True
                tracer = Tracer(module, registry)  # a fresh record for the captured pass
            while True:
                if forward is not module:
                    tracer.add_named_tensors(swapped)
                tracer.mark_inputs(list(args) + list(kwargs.values()))
                before = _state_snapshot(module) if warmup is None and not warmed else None
                with tracer.tracing():
                    with torch.set_grad_enabled(include_backward):
                        out = forward(*args, **kwargs)
                    tracer.mark_outputs(out)
                    if include_backward:
                        tracer.phase = "backward"
                        tracer.push_scope(BACKWARD_SCOPE, "autograd")
                        try:
                            loss = default_loss(out)
                        except ValueError:
                            raise ModelInputError(
                                f"{subject.label}: include_backward=True needs an output that "
                                "requires grad; none of the outputs does."
                            ) from None
                        backward(loss)
                if before is not None and not _same_state(before, _state_snapshot(module)):
                    warmed = True  # that pass was the warm-up
                    tracer = Tracer(module, registry)
                    continue
                break
        except ModelprofError:
            raise
        except Exception as exc:
            if mode != "real" and _is_data_dependent(exc, mode):
                failed = tracer.failed_at
                where = f" in {failed or rollup.ROOT!r}" if failed is not None else ""
                raise _NeedsData(f"{_short(exc)}{where}") from exc
            layer = tracer.failed_at
            if layer is None:
                where = "before any layer ran"
            elif layer == "":
                where = f"in the model's own forward ({type(module).__name__})"
            else:
                where = f"at layer {layer!r} ({tracer.capture.module_types.get(layer, '?')})"
            raise ModelInputError(
                f"{subject.label} rejected input {_describe_inputs(args, kwargs)} {where}: "
                f"{_short(exc)}. Check input_shape=/inputs= against what the model expects"
                + (
                    f" (default {subject.spec.default_input_shape})"
                    if subject.spec is not None and subject.spec.default_input_shape
                    else ""
                )
                + "."
            ) from exc
        capture = tracer.finish()
        if warmed:
            note = "; ".join(x for x in (note, "after a warm-up forward") if x)
        return capture, module, args, kwargs, note
    raise AssertionError("unreachable")  # pragma: no cover


def _state_snapshot(module: nn.Module) -> list[tuple[Any, ...]]:
    """The objects a module tree holds (attributes, parameters, buffers), by reference.

    Holding the objects (not their ids) keeps them alive, so an id cannot be reused by a
    replacement; :func:`_same_state` compares by identity.
    """
    snapshot: list[tuple[Any, ...]] = []
    for m in module.modules():
        attrs = m.__dict__
        snapshot.append(tuple(attrs.values()))
        snapshot.append(tuple(attrs["_parameters"].values()))
        snapshot.append(tuple(attrs["_buffers"].values()))
    return snapshot


def _same_state(a: list[tuple[Any, ...]], b: list[tuple[Any, ...]]) -> bool:
    """Did no attribute, parameter or buffer of any module get replaced or added?"""
    return len(a) == len(b) and all(
        len(x) == len(y) and all(p is q for p, q in zip(x, y, strict=True))
        for x, y in zip(a, b, strict=True)
    )



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
    subject: _Subject,
    capture: Any,
    module: nn.Module,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    info: CaptureInfo,
    machine: Machine,
    include_backward: bool,
    mode: CaptureMode,
    device: torch.device | None,
) -> ModelProfile:
    params = list({id(p): p for p in module.parameters()}.values())
    buffers = list({id(b): b for b in module.buffers()}.values())
    t = rollup.totals(capture.ops)
    dtype = _module_dtype(module)
    run_device = "meta" if mode == "meta" else str(device or module_device(module))
    env = Environment(
        torch_version=torch.__version__.split("+")[0],
        python_version=platform.python_version(),
        platform=sys.platform,
        device=run_device,
        dtype=str(dtype).removeprefix("torch."),
    )
    profile = ModelProfile(
        model=subject.label,
        inputs=_input_specs(args, kwargs),
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
        total_memory=t.memory,
        peak_activation_bytes=capture.peak_activation_bytes,
        arithmetic_intensity=rollup.arithmetic_intensity(t.flops, t.memory),
        num_ops=sum(1 for op in capture.ops if not op.is_view),
        op_breakdown=rollup.family_breakdown(capture.ops),
        layers=rollup.layer_rows(capture, machine),
        uncounted_ops=rollup.uncounted(capture.ops),
        uncalled_modules=capture.uncalled_modules,
        partition=partition(capture, machine).summary(),
    )
    profile._capture = capture
    return profile
