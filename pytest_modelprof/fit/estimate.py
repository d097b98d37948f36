"""The peak memory of an inference or training step, without allocating the model.

A model given by name is built on meta (nothing allocated); a module of yours runs as a
stand-in copy (``capture/standin.py``), never itself. The step runs on **fake** CPU tensors
by default: kernels see a device, so autocast applies and attention takes the kernel the
device picks (a fused one, as on a GPU); meta tensors take PyTorch's math attention instead,
which materialises every score. ``mode="meta"`` runs on meta anyway (fp32/bf16/fp16 only:
autocast needs a device). Both allocate nothing. :func:`measure_step_memory` runs the very
same step on real tensors (tests compare the two, component by component).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any, Literal

import torch
from pydantic import BaseModel, ConfigDict
from torch import nn

from pytest_modelprof._compat import FakeTensorMode
from pytest_modelprof._tensors import Inputs, as_inputs, flat_tensors, map_tensors
from pytest_modelprof.capture.classify import short
from pytest_modelprof.capture.hf_masks import has_padding, unpadded_masks
from pytest_modelprof.capture.standin import cloned_standins, empty_standins, standin_copy
from pytest_modelprof.errors import ModelBuildError, ModelInputError, ModelprofError, UsageError
from pytest_modelprof.fit.options import StepOptions
from pytest_modelprof.fit.shard import scaled_components, sharded_peak
from pytest_modelprof.fit.step import StepLog, tracked_step
from pytest_modelprof.models import resolve

__all__ = ["MemoryEstimate", "PeakMoment", "estimate_memory", "measure_step_memory"]

EstimateMode = Literal["auto", "fake", "meta"]
_CPU = torch.device("cpu")
_META = torch.device("meta")
_LOW = {"bf16": torch.bfloat16, "fp16": torch.float16, "bf16-master": torch.bfloat16}
_UNPADDED = (
    "unpadded input: transformers' attention-mask checks answered as real unpadded tokens "
    "answer them (no mask); pass inputs= with an attention_mask holding zeros for a padded batch"
)


class PeakMoment(BaseModel):
    """Where the peak happens: the op that allocated last, the module running, the phase."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    op: str
    module: str
    phase: str


class MemoryEstimate(BaseModel):
    """Peak bytes of one step on one device and what they are made of at that moment."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    model: str
    mode: str
    train: bool
    optimizer: str
    optimizer_impl: str
    precision: str
    recipe: str
    devices: int
    shard: str
    input_shapes: list[list[int]]
    peak_bytes: int
    breakdown: dict[str, int]
    peak_at: PeakMoment
    single_device_peak_bytes: int
    model_states: dict[str, int]
    parameter_count: int
    ops: int
    notes: list[str]


def _shapes(inputs: Inputs) -> list[list[int]]:
    return [list(t.shape) for t in flat_tensors(inputs, [])]


def summarize(
    log: StepLog,
    options: StepOptions,
    *,
    model: str,
    mode: str,
    inputs: Inputs,
    params: int,
    notes: list[str],
) -> MemoryEstimate:
    """The estimate of a tracked step (sharding applied from the same log)."""
    t = log.tracker
    if options.shard != "none" and options.device_count == 1:
        notes = [*notes, f"shard {options.shard!r} over 1 device divides nothing (device_count=1)"]
    single = sum(log.static.values()) + t.peak_bytes
    peak = sharded_peak(log, options.shard, options.device_count)
    moment = PeakMoment(op=t.peak_op, module=t.peak_module, phase=t.peak_phase)
    if peak.clock != t.peak_clock:
        moment = _moment_at(log, peak.clock)
    return MemoryEstimate(
        model=model,
        mode=mode,
        train=options.train,
        optimizer=options.optimizer,
        optimizer_impl=options.optimizer_impl,
        precision=options.precision,
        recipe=options.recipe,
        devices=options.device_count,
        shard=options.shard,
        input_shapes=_shapes(inputs),
        peak_bytes=peak.peak_bytes,
        breakdown=peak.breakdown,
        peak_at=moment,
        single_device_peak_bytes=single,
        model_states=model_states(log, options),
        parameter_count=params,
        ops=t.ops,
        notes=notes,
    )


def model_states(log: StepLog, options: StepOptions) -> dict[str, int]:
    """Parameters, gradients and optimizer state after the step, per device (what ZeRO
    divides and DeepSpeed's estimator counts)."""
    totals = {
        "parameters": log.static["parameters"],
        "gradients": 0,
        "optimizer_state": log.static.get("optimizer_state", 0),  # master weights
    }
    for a in log.tracker.log:
        category = log.categories[id(a)]
        if category in totals:
            totals[category] += a.nbytes
    scaled = scaled_components(options.shard)
    n = options.device_count
    return {k: (-(-v // n) if k in scaled else v) for k, v in totals.items()}


def _moment_at(log: StepLog, clock: int) -> PeakMoment:
    t = log.tracker
    born = [a for a in t.log if a.born == clock]
    phase = born[0].phase if born else t.peak_phase
    op, module = t.moments.get(clock, ("", f"({phase})"))
    return PeakMoment(op=op, module=module, phase=phase)


def estimate_memory(
    model: nn.Module | str,
    *,
    inputs: Any = None,
    input_shape: tuple[int, ...] | None = None,
    batch: int | None = None,
    seq_len: int | None = None,
    options: StepOptions | None = None,
    mode: EstimateMode = "auto",
    loss_fn: Callable[[Any], torch.Tensor] | None = None,
    **arch: Any,
) -> MemoryEstimate:
    """Estimate the peak memory of one step of ``model`` (a name or a module) on one device.

    ``batch`` and ``seq_len`` resize a named model's default input (or ``input_shape``'s
    first dimension); ``arch`` goes to a named model's builder. Nothing is allocated.
    """
    opts = options or StepOptions()
    if mode not in ("auto", "fake", "meta"):
        raise ModelprofError(f"mode must be 'auto', 'fake' or 'meta', not {mode!r}")
    if mode == "meta" and opts.mixed:
        raise ModelprofError(
            f"precision {opts.precision!r} runs the forward under autocast, which meta tensors "
            "ignore (no device); use mode='fake' or 'auto'"
        )
    label, source, spec = _source(model, arch)
    shape = _input_shape(spec, source, input_shape, batch, seq_len, inputs)
    modes: list[str] = (
        ["fake", "meta"]
        if mode == "auto" and not opts.mixed
        else ["fake" if mode == "auto" else mode]
    )
    failures: list[str] = []
    for m in modes:
        try:
            log, used, unpadded = _run_on(m, source, spec, shape, inputs, opts, loss_fn)
        except ModelprofError:
            raise
        except Exception as exc:  # the mode's limit; the next mode may run it
            failures.append(f"{m}: {short(exc)}")
            continue
        notes = [f"{m} tensors"] + [f"{f} (fell back)" for f in failures]
        if unpadded:
            notes.append(_UNPADDED)
        params = sum(p.numel() for p in source.parameters())
        return summarize(log, opts, model=label, mode=m, inputs=used, params=params, notes=notes)
    texts = {f.partition(": ")[2] for f in failures}
    if len(texts) == 1:  # every mode refused alike: the model's or the input's own error
        raise ModelInputError(
            f"{label}: the step failed on tensors without data: {texts.pop()} (the same in "
            f"{' and '.join(modes)} mode). Check the inputs (shape, dtype; token ids are "
            "int64: pass inputs= or a named model) and the options."
        )
    raise ModelBuildError(
        f"{label}: the step could not run without data ({'; '.join(failures)}). The estimate "
        "never allocates the model: fix what the message names, or measure a real step with "
        "measure_step_memory() on a model that fits in memory."
    )


def measure_step_memory(
    model: nn.Module,
    inputs: Any,
    *,
    options: StepOptions | None = None,
    loss_fn: Callable[[Any], torch.Tensor] | None = None,
) -> MemoryEstimate:
    """The same step on real tensors (a copy of ``model`` with its weights), tracked alike."""
    opts = options or StepOptions()
    copy = standin_copy(model, cloned_standins(_LOW.get(opts.precision)))
    batch = _cast_inputs(as_inputs(inputs), opts, None, None)
    log = tracked_step(copy, batch, opts, autocast_device="cpu", loss_fn=loss_fn)
    params = sum(p.numel() for p in model.parameters())
    return summarize(
        log,
        opts,
        model=type(model).__name__,
        mode="real",
        inputs=batch,
        params=params,
        notes=["real tensors"],
    )


def _source(model: nn.Module | str, arch: dict[str, Any]) -> tuple[str, nn.Module, Any]:
    if isinstance(model, nn.Module):
        if arch:
            raise UsageError(f"estimate_memory() got unexpected keyword arguments: {sorted(arch)}")
        return type(model).__name__, model, None
    if not isinstance(model, str):
        raise UsageError(f"model must be an nn.Module or a model name, not {type(model).__name__}")

    spec = resolve(model)
    try:
        with torch.device("meta"):
            module: nn.Module = spec.build(**arch)
    except ModelprofError:
        raise
    except Exception as exc:
        raise ModelBuildError(
            f"{model}: building on meta failed ({short(exc)}); the estimate never allocates "
            "the model. Check the --arch values, or build the module yourself and pass it."
        ) from exc
    return spec.name, module, spec


def _input_shape(
    spec: Any,
    module: nn.Module,
    shape: tuple[int, ...] | None,
    batch: int | None,
    seq_len: int | None,
    inputs: Any,
) -> tuple[int, ...] | None:
    for label, value in (("batch", batch), ("seq_len", seq_len)):
        if value is not None and (
            isinstance(value, bool) or not isinstance(value, int) or value < 1
        ):
            raise ModelInputError(f"{label} must be a whole number >= 1, got {value!r}")
    if inputs is not None:
        if batch is not None or seq_len is not None or shape is not None:
            raise ModelInputError("give inputs= or a shape (input_shape, batch, seq_len), not both")
        return None
    if shape is not None:
        if seq_len is not None:
            raise ModelInputError(
                "seq_len resizes a named model's input; with input_shape, "
                "write the length into the shape"
            )
        return (batch, *shape[1:]) if batch is not None else tuple(shape)
    if spec is None:
        raise ModelInputError(
            f"{type(module).__name__}: no input given; pass input_shape=(...) or inputs=..."
        )
    resized: tuple[int, ...] | None = spec.input_shape_for(
        batch=batch, seq_len=seq_len, module=module
    )
    return resized


def _cast_inputs(
    inputs: Inputs, opts: StepOptions, device: torch.device | None, fake: Any
) -> Inputs:
    """Inputs for the run: floating ones in a pure low precision; empty stand-ins off real."""
    low = _LOW.get(opts.precision)

    def convert(t: torch.Tensor) -> torch.Tensor:
        dtype = low if low is not None and t.is_floating_point() else t.dtype
        if device is None:
            return t.detach().to(dtype)
        with fake if fake is not None else contextlib.nullcontext():
            return torch.empty_strided(t.size(), t.stride(), dtype=dtype, device=device)

    return map_tensors(inputs[0], convert), map_tensors(inputs[1], convert)


def _run_on(
    mode: str,
    source: nn.Module,
    spec: Any,
    shape: tuple[int, ...] | None,
    inputs: Any,
    opts: StepOptions,
    loss_fn: Callable[[Any], torch.Tensor] | None,
) -> tuple[StepLog, Inputs, bool]:
    low = _LOW.get(opts.precision)
    fake = FakeTensorMode(allow_non_fake_inputs=True) if mode == "fake" else None
    device = _CPU if fake is not None else _META
    copy = standin_copy(source, empty_standins(device, low, fake))
    context = fake if fake is not None else torch.device("meta")
    # transformers skips its causal mask for an unpadded real input; on stand-ins it cannot
    # see the values, so its checks are answered from the real input (a named model's: none)
    padded = inputs is not None and has_padding(as_inputs(inputs))
    masks = contextlib.nullcontext(None) if padded else unpadded_masks()
    with context, masks as checks:
        if inputs is not None:
            batch = _cast_inputs(as_inputs(inputs), opts, device, fake)
        elif spec is not None:
            batch = spec.example_inputs(shape, device=device, dtype=low, module=copy)
        else:
            assert shape is not None  # _input_shape raised for a module without inputs
            batch = ((torch.empty(shape, dtype=low or torch.float32, device=device),), {})
        log = tracked_step(copy, batch, opts, autocast_device="cpu", loss_fn=loss_fn)
    return log, batch, checks is not None and checks.answered > 0
