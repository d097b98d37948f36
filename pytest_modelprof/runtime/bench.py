"""``modelprof bench``: one model measured end to end on real tensors, as one JSON document.

:func:`bench_model` times the forward pass, the backward pass and a full training step
(warm-up, then rounds; CUDA events on a CUDA device, the host clock otherwise, always inside a
:class:`~pytest_modelprof.runtime.context.ProfilingContext`: eval mode for the forward, train
mode with dropout off for the others, a fixed seed, everything restored), measures the peak
memory of a training step with its breakdown, counts the forward's FLOPs by op family with
:func:`~pytest_modelprof.profile.profile_model`, and records the hardware and software.
:func:`bench` does the same for a model name. The document it fills is
:class:`~pytest_modelprof.runtime.bench_document.BenchReport`.

Memory is the peak of one training step once the optimizer state exists (one untimed step
creates it first), from the allocation tracker on the host and from the CUDA caching
allocator on a GPU. ``parameters`` holds the model's weights and buffers, ``activations``
the inputs, the saved tensors and every temporary; the four parts add up to the peak.
The model is left as it was: weights, buffers, gradients and train/eval flags are restored.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime, timezone
from typing import Any

import torch
from torch import nn

from pytest_modelprof._tensors import (
    Inputs,
    as_inputs,
    backward,
    call_model,
    default_loss,
    flat_tensors,
    module_device,
)
from pytest_modelprof.capture.real import real_model_and_inputs
from pytest_modelprof.errors import ModelInputError, ModelprofError, SettingsError
from pytest_modelprof.host import cpu_name
from pytest_modelprof.models import resolve
from pytest_modelprof.optimizers import build_optimizer, check_optimizer
from pytest_modelprof.profile import profile_model
from pytest_modelprof.progress import ProgressFn
from pytest_modelprof.runtime.bench_document import (
    BenchReport,
    BenchRun,
    FlopsSection,
    HardwareInfo,
    MemorySection,
    OptimizerName,
    RuntimeSection,
    RuntimeStats,
)
from pytest_modelprof.runtime.context import (
    ProfilingContext,
    restore_training_flags,
    training_flags,
)
from pytest_modelprof.runtime.memory import MemoryStats, measure_memory
from pytest_modelprof.runtime.module_timing import ModuleTimings, time_modules
from pytest_modelprof.runtime.timing import (
    LossFn,
    time_backward,
    time_forward,
    time_training_step,
)

__all__ = [
    "bench",
]


# -- pieces -----------------------------------------------------------------------------------

def hardware_info(device: torch.device | str | None = None) -> HardwareInfo:
    """CPU model, logical cores, torch version and the GPU in use (or the first one)."""
    dev = torch.device(device) if device is not None else torch.device("cpu")
    available = torch.cuda.is_available()
    gpu_name: str | None = None
    gpu_memory: int | None = None
    if available:
        index = dev.index if dev.type == "cuda" and dev.index is not None else (
            torch.cuda.current_device() if dev.type == "cuda" else 0
        )
        props = torch.cuda.get_device_properties(index)
        gpu_name = str(props.name)
        gpu_memory = int(props.total_memory)
    return HardwareInfo(
        cpu=cpu_name(),
        cores=os.cpu_count() or 1,
        torch=str(torch.__version__),
        cuda_available=available,
        gpu_name=gpu_name,
        gpu_memory_bytes=gpu_memory,
    )


def _flops(model: nn.Module, batch: Inputs) -> FlopsSection:
    args, kwargs = batch
    if args and kwargs:
        # profile_model takes positional or keyword inputs; bind the positional ones by name.
        raise ModelInputError("counting FLOPs needs positional or keyword inputs, not both")
    profile = profile_model(model, inputs=dict(kwargs) if kwargs else tuple(args))
    families = {f.family: f.flops for f in profile.op_breakdown if f.flops}
    return FlopsSection(total=profile.total_flops, breakdown=dict(sorted(families.items())))


class _Snapshot:
    """Weights, buffers, gradients and train flags, to put the model back afterwards."""

    def __init__(self, model: nn.Module) -> None:
        self.model = model
        with torch.no_grad():
            self.values = {k: v.detach().clone()
                           for k, v in model.state_dict(keep_vars=True).items()}
        self.grads = [(p, p.grad) for p in model.parameters()]
        self.flags = training_flags(model)

    def restore(self) -> None:
        with torch.no_grad():
            for k, v in self.model.state_dict(keep_vars=True).items():
                v.copy_(self.values[k])
        for p, g in self.grads:
            p.grad = g
        restore_training_flags(self.flags)


def _memory(
    model: nn.Module,
    batch: Inputs,
    opt: torch.optim.Optimizer,
    loss_of: LossFn | None,
    seed: int | None,
) -> MemoryStats:
    # One untimed step creates the optimizer state, so the peak is that of a steady step.
    with ProfilingContext(model, seed=seed, threads=None, eval_mode=False, grad=True):
        loss = (loss_of or default_loss)(call_model(model, batch))
        backward(loss)
        del loss
        opt.step()
        opt.zero_grad(set_to_none=True)
    return measure_memory(model, batch, mode="training_step", optimizer=opt, loss_fn=loss_of,
                          seed=seed)

# -- measuring --------------------------------------------------------------------------------

@contextmanager
def _stage_errors(progress: ProgressFn, stages: list[str], stage: str) -> Iterator[None]:
    """Report the stage; a failure inside it names the stage (and keeps the cause chained)."""
    progress(stage, stages.index(stage), len(stages))
    try:
        yield
    except ModelprofError:
        raise
    except Exception as exc:
        text = " ".join(str(exc).split())
        hint = (
            "; batch norm in train mode needs more than one value per channel: use a larger "
            "batch or input size" if "more than 1 value per channel" in text else ""
        )
        raise ModelprofError(
            f"bench: the {stage} failed: {type(exc).__name__}: {text[:300]}{hint}"
        ) from exc


def bench_model(
    model: nn.Module,
    inputs: Any,
    *,
    rounds: int = 20,
    warmup: int = 3,
    optimizer: OptimizerName = "sgd-momentum",
    loss_fn: LossFn | None = None,
    seed: int | None = 0,
    threads: int | None = None,
    module_rounds: int | None = None,
    progress: ProgressFn | None = None,
) -> tuple[BenchReport, ModuleTimings | None]:
    """Measure ``model`` on ``inputs`` (real tensors on the model's device).

    ``optimizer`` names the optimizer of the training step and the memory measurement.
    ``threads=None`` keeps torch's intra-op thread count. ``module_rounds`` (default: none)
    also times every module with hooks over that many rounds. Returns the document and the
    module times. The model is restored afterwards.
    """
    if rounds < 1:
        raise SettingsError(f"rounds must be >= 1, got {rounds}")
    if warmup < 0:
        raise SettingsError(f"warmup must be >= 0, got {warmup}")
    check_optimizer(optimizer)  # before minutes of timing
    device = module_device(model)
    if device.type == "meta":
        raise ModelInputError(
            "bench runs the model, and it is on the meta device; build it on cpu or cuda"
        )
    batch = as_inputs(inputs)
    trainable = [p for p in model.parameters() if p.requires_grad]
    if not trainable:
        raise ModelInputError(
            "the model has no trainable parameters, so there is no backward pass or training "
            "step to measure"
        )
    stages = ["forward", "backward", "training step", "memory", "flops"]
    if module_rounds:
        stages.append("module times")
    report = progress or (lambda stage, done, total: None)
    snapshot = _Snapshot(model)
    try:
        with _stage_errors(report, stages, "forward"):
            fwd = time_forward(model, batch, rounds=rounds, warmup=warmup, seed=seed,
                               threads=threads)
        with _stage_errors(report, stages, "backward"):
            bwd = time_backward(model, batch, loss_fn=loss_fn, rounds=rounds, warmup=warmup,
                                seed=seed, threads=threads)
        with _stage_errors(report, stages, "training step"):
            opt = build_optimizer(optimizer, trainable)
            step = time_training_step(model, batch, optimizer=opt, loss_fn=loss_fn,
                                      rounds=rounds, warmup=warmup, seed=seed, threads=threads)
        snapshot.restore()
        with _stage_errors(report, stages, "memory"):
            memory = _memory(model, batch, build_optimizer(optimizer, trainable), loss_fn, seed)
        snapshot.restore()
        with _stage_errors(report, stages, "flops"):
            flops = _flops(model, batch)
        modules: ModuleTimings | None = None
        if module_rounds:
            with _stage_errors(report, stages, "module times"):
                modules = time_modules(
                    model, batch, rounds=module_rounds, warmup=min(warmup, 2), seed=seed,
                    threads=threads,
                )
    finally:
        snapshot.restore()
    doc = BenchReport(
        runtime=RuntimeSection(forward=RuntimeStats.of(fwd), backward=RuntimeStats.of(bwd),
                               training_step=RuntimeStats.of(step)),
        memory=MemorySection.of(memory),
        flops=flops,
        hardware=hardware_info(device),
        timestamp=datetime.now(timezone.utc).isoformat(timespec="seconds"),
    )
    return doc, modules


def with_batch(shape: Sequence[int], batch: int | None) -> tuple[int, ...]:
    """``shape`` with its first dimension replaced by ``batch`` (unchanged for ``None``)."""
    out = tuple(int(s) for s in shape)
    if batch is None:
        return out
    if batch < 1:
        raise SettingsError(f"batch must be >= 1, got {batch}")
    if not out:
        raise SettingsError("cannot set the batch size of a scalar input shape")
    return (batch, *out[1:])


def bench(
    model: str,
    *,
    input_shape: Sequence[int] | None = None,
    batch: int | None = None,
    device: str | torch.device | None = None,
    dtype: torch.dtype | str | None = None,
    rounds: int = 20,
    warmup: int = 3,
    optimizer: OptimizerName = "sgd-momentum",
    seed: int | None = 0,
    threads: int | None = None,
    module_rounds: int | None = None,
    progress: ProgressFn | None = None,
    **arch_kwargs: Any,
) -> BenchRun:
    """Build the named model (random weights) on ``device`` and :func:`bench_model` it.

    ``input_shape`` defaults to the model's own; ``batch`` replaces its first dimension.
    Extra keyword arguments go to the model builder.
    """
    spec = resolve(model)
    shape: tuple[int, ...] | None = tuple(input_shape) if input_shape is not None else None
    if batch is not None:
        # Without a shape, the model's own as --arch built it (image size, positions, ...).
        base = shape if shape is not None else spec.default_shape_for(spec.probe(**arch_kwargs))
        if base is None:
            raise SettingsError(f"{model}: no default input shape to set the batch of; give "
                             "input_shape")
        shape = with_batch(base, batch)
    dev = torch.device(device) if device is not None else torch.device("cpu")
    module, batch_inputs = real_model_and_inputs(
        model, input_shape=shape, device=dev, dtype=dtype, **arch_kwargs
    )
    doc, modules = bench_model(
        module, batch_inputs, rounds=rounds, warmup=warmup, optimizer=optimizer, seed=seed,
        threads=threads, module_rounds=module_rounds, progress=progress,
    )
    first = next((p for p in module.parameters() if p.is_floating_point()), None)
    return BenchRun(
        model=spec.name,
        device=str(dev),
        dtype=str(first.dtype).removeprefix("torch.") if first is not None else "float32",
        input_shapes=[[int(s) for s in t.shape] for t in flat_tensors(batch_inputs)],
        optimizer=optimizer,
        report=doc,
        modules=modules,
    )
