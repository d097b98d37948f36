"""Run one inference or training step under the lifetime tracker; the same code for every mode.

The estimate (meta or fake tensors) and the check on real tensors call :func:`tracked_step`
with the module and inputs of their mode, so the only thing that can differ between them is
what the kernels return. The breakdown at the peak:

* ``parameters``, ``buffers``, ``inputs``: what existed before the step;
* ``gradients``: storages that are a parameter's ``.grad`` after the step;
* ``optimizer_state``: storages the optimizer keeps in ``optimizer.state`` after the step, and
  under ``bf16-master`` the fp32 master weights it steps (there before the step, like the
  parameters);
* ``grad_scaler``: fp16-mixed's loss scale and growth tracker (``torch.amp.GradScaler``),
  kept between steps, one per device (so sharding divides none of it);
* ``activations``: made in the forward and still alive when it ended (saved for backward, the
  outputs); under ``no_grad`` only the outputs;
* ``transient``: everything else alive at that moment (temporaries of forward, backward and
  the optimizer's update; autocast's weight copies).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from pytest_modelprof._compat import NoOverflowGradScaler, storage_key
from pytest_modelprof._tensors import Inputs, backward, call_model, default_loss, flat_tensors
from pytest_modelprof.errors import ModelprofError
from pytest_modelprof.fit.options import StepOptions
from pytest_modelprof.fit.tracker import NEVER, Allocation, LifetimeTracker, module_scopes
from pytest_modelprof.optimizers import build_optimizer
from pytest_modelprof.runtime.memory import collector_paused, storage_bytes

__all__ = [
    "COMPONENTS",
    "StepLog",
    "tracked_step",
]

#: Breakdown keys, in the order reports list them.
COMPONENTS = (
    "parameters",
    "buffers",
    "inputs",
    "gradients",
    "optimizer_state",
    "grad_scaler",
    "activations",
    "transient",
)

_DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16}


@dataclass
class StepLog:
    """What one tracked step left: the tracker's log, categories, static bytes, the peak."""

    tracker: LifetimeTracker
    categories: dict[int, str]  # id(Allocation) -> component
    static: dict[str, int]
    unit_bytes: tuple[int, int]  # the largest FSDP unit: parameter bytes, gradient bytes

    def breakdown_at(self, clock: int) -> dict[str, int]:
        """Bytes per component alive at ``clock`` (a doubled op count)."""
        out = dict.fromkeys(COMPONENTS, 0)
        out.update(self.static)
        for a in self.tracker.live_at(clock):
            out[self.categories[id(a)]] += a.nbytes
        return out


def autocast_dtype(options: StepOptions) -> torch.dtype | None:
    """The autocast dtype of a mixed precision, else None."""
    return _DTYPES[options.precision.split("-")[0]] if options.mixed else None


def make_optimizer(
    options: StepOptions, params: list[nn.Parameter] | list[torch.Tensor]
) -> torch.optim.Optimizer | None:
    """The torch optimizer the options name (its real ``step`` runs, temporaries and all)."""
    if not options.train or options.optimizer == "none" or not params:
        return None
    impl: dict[str, Any] = {
        "for-loop": {"foreach": False},
        "foreach": {"foreach": True},
        "fused": {"fused": True},
    }[options.optimizer_impl]
    optimizer: torch.optim.Optimizer = build_optimizer(options.optimizer, params, **impl)
    return optimizer


def tracked_step(
    model: nn.Module,
    inputs: Inputs,
    options: StepOptions,
    *,
    autocast_device: str,
    loss_fn: Callable[[Any], torch.Tensor] | None = None,
) -> StepLog:
    """Run the step of ``options`` on ``model`` (already on its tensors) and track every storage.

    ``model`` is a copy of the caller's: its ``training`` flag and ``.grad`` are set here.
    """
    loss_of = loss_fn or default_loss
    if options.checkpointing:
        enable_checkpointing(model)
    model.train(options.train)
    params = [p for p in model.parameters() if p.requires_grad]
    for p in params:
        p.grad = None
    masters = master_weights(options, params)
    opt = make_optimizer(options, masters or params)
    input_tensors = flat_tensors(inputs, [])
    static = {
        "parameters": storage_bytes(model.parameters()),
        "buffers": storage_bytes(model.buffers()),
        "inputs": storage_bytes(input_tensors),
    }
    if masters:
        static["optimizer_state"] = storage_bytes(masters)
    tracker = LifetimeTracker(
        [*model.parameters(), *model.buffers(), *input_tensors, *masters],
        params=model.parameters(),
    )
    amp = autocast_dtype(options)
    scaler = grad_scaler(options, autocast_device)
    # No collection first: garbage made before the step holds no storage the tracker follows
    # (it only follows storages born inside), so only a pause mid-step would move a free.
    with collector_paused(collect=False), module_scopes(model, tracker.scope):
        with tracker, torch.set_grad_enabled(options.train):
            with torch.autocast(autocast_device, dtype=amp, enabled=amp is not None):
                out = call_model(model, inputs)
                loss = loss_of(out) if options.train else None
            del out
            if loss is not None:
                tracker.set_phase("backward")
                backward(scaler.scale(loss) if scaler is not None else loss)
                del loss
                if opt is not None:
                    tracker.set_phase("optimizer")
                    if masters:
                        _master_update(opt, params, masters)
                    else:
                        _update(opt, scaler)
            tracker.finish()
        categories = _categorize(tracker, model, opt, scaler)
    return StepLog(tracker, categories, static, _largest_unit(model))


def master_weights(options: StepOptions, params: list[nn.Parameter]) -> list[torch.Tensor]:
    """fp32 copies of the low-precision parameters for the optimizer to step (the master
    weights a ``-master`` precision keeps from the start, as DeepSpeed's engine makes them at
    initialisation); none for other precisions or without an optimizer."""
    if not options.master_weights or not options.train or options.optimizer == "none":
        return []
    return [p.detach().float() for p in params]


def _master_update(
    opt: torch.optim.Optimizer, params: list[nn.Parameter], masters: list[torch.Tensor]
) -> None:
    """The master-weights update: the gradients cast to fp32 as the masters' gradients, the
    optimizer's step on the masters, their values copied back into the low-precision weights,
    the fp32 gradients released."""
    for p, m in zip(params, masters, strict=True):
        m.grad = None if p.grad is None else p.grad.float()
    opt.step()
    with torch.no_grad():
        for p, m in zip(params, masters, strict=True):
            p.copy_(m)
    for m in masters:
        m.grad = None


def grad_scaler(options: StepOptions, device: str) -> NoOverflowGradScaler | None:
    """fp16-mixed's ``torch.amp.GradScaler`` (fp16's range needs loss scaling; bf16's does
    not), stepping as when no gradient overflowed; None for every other precision."""
    if not options.train or options.precision != "fp16-mixed":
        return None
    return NoOverflowGradScaler(device)


def _update(opt: torch.optim.Optimizer, scaler: NoOverflowGradScaler | None) -> None:
    """The optimizer's update; with a scaler, as torch's AMP recipe runs it: ``step`` (the
    gradients unscaled in place first, or by a fused optimizer itself), then ``update``."""
    if scaler is None:
        opt.step()
        return
    scaler.step(opt)
    scaler.update()


def enable_checkpointing(model: nn.Module) -> None:
    """The model's own activation checkpointing, non-reentrant (as torch recommends)."""
    kwargs = {"use_reentrant": False}
    enable = getattr(model, "activation_checkpointing_enable", None)  # transformers >= 5.3
    if callable(enable):
        enable(activation_checkpointing_kwargs=kwargs)
        _no_cache_under_checkpointing(model)
        return
    enable = getattr(model, "gradient_checkpointing_enable", None)
    if not callable(enable):
        raise ModelprofError(
            f"{type(model).__name__} has no activation_checkpointing_enable() nor "
            "gradient_checkpointing_enable(); checkpointing counts as the model runs it: "
            "wrap its blocks in torch.utils.checkpoint.checkpoint"
        )
    enable(gradient_checkpointing_kwargs=kwargs)
    _no_cache_under_checkpointing(model)


def _no_cache_under_checkpointing(model: nn.Module) -> None:
    """transformers turns the KV cache off itself when it trains checkpointed, after printing a
    warning the user cannot act on; turning it off first changes no figure and prints nothing."""
    config = getattr(model, "config", None)
    if getattr(config, "use_cache", False):
        config.use_cache = False  # type: ignore[union-attr]


def category_of(
    a: Allocation,
    grads: set[int],
    state: set[int],
    forward_end: int,
    scaler: frozenset[int] = frozenset(),
) -> str:
    """The component of one allocation (see the module docstring)."""
    alive = a.freed == NEVER
    if alive and a.key in scaler:
        return "grad_scaler"
    if alive and a.key in grads:
        return "gradients"
    if alive and a.key in state:
        return "optimizer_state"
    if a.phase == "forward" and a.freed > forward_end:
        return "activations"
    return "transient"


def _categorize(
    tracker: LifetimeTracker,
    model: nn.Module,
    opt: torch.optim.Optimizer | None,
    scaler: NoOverflowGradScaler | None = None,
) -> dict[int, str]:
    grads = {
        storage_key(p.grad.untyped_storage()) for p in model.parameters() if p.grad is not None
    }
    state_tensors: list[torch.Tensor] = []
    if opt is not None:
        for s in opt.state.values():
            flat_tensors(dict(s), state_tensors)
    state = {storage_key(t.untyped_storage()) for t in state_tensors}
    kept = frozenset(
        storage_key(t.untyped_storage()) for t in (scaler.state_tensors() if scaler else [])
    )
    forward_end = tracker.phase_end.get("forward", tracker.clock)
    return {id(a): category_of(a, grads, state, forward_end, kept) for a in tracker.log}


def _largest_unit(model: nn.Module) -> tuple[int, int]:
    """Parameter and gradient bytes of the largest FSDP/ZeRO-3 unit.

    Units are the blocks of every ``nn.ModuleList`` (how transformer layers are wrapped);
    a model without one is wrapped by its top-level children.
    """
    units: list[nn.Module] = (
        [block for m in model.modules() if isinstance(m, nn.ModuleList) for block in m]
        or list(model.children())
        or [model]
    )
    best = (0, 0)
    for unit in units:
        params = [p for p in unit.parameters()]
        nbytes = storage_bytes(params)
        grads = storage_bytes([p.grad for p in params if p.grad is not None])
        best = max(best, (nbytes, grads))
    return best
