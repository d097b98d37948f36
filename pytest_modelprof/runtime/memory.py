"""Measured memory: peak bytes of a forward pass, a backward pass or a training step.

Two methods, one result type (:class:`MemoryStats`):

* ``"tracked"`` (any device, the default on CPU): :class:`AllocationTracker`, a dispatch mode
  that sees every ATen op, registers each *new* tensor storage an op returns and notices when
  it is freed. The live total after each op, and its maximum, follow only from the op sequence
  and Python's reference counting (the cyclic collector is paused while tracking), so the figure
  is identical from run to run, unlike process RSS, which the allocator and the OS blur.
  It does not see scratch space a kernel allocates and frees inside one op.
* ``"cuda"`` (the default on a CUDA device): the caching allocator's own counters,
  ``torch.cuda.reset_peak_memory_stats`` and ``torch.cuda.max_memory_allocated``. This
  includes kernel workspaces and the allocator's 512-byte rounding.

The breakdown splits the peak into the memory that existed before the call (``parameters``,
``buffers``, ``inputs``) and what the call allocated (``gradients``, ``optimizer_state``,
``activations``; the last covers saved tensors and temporaries of forward and backward).
"""

from __future__ import annotations

import copy
import gc
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import Any, Literal

import torch
from pydantic import BaseModel, ConfigDict
from torch import nn

from pytest_modelprof._compat import StorageWeakRef, TorchDispatchMode, storage_key
from pytest_modelprof._tensors import (
    as_inputs,
    backward,
    call_model,
    default_loss,
    flat_tensors,
    module_device,
)
from pytest_modelprof.errors import SettingsError
from pytest_modelprof.runtime.context import ProfilingContext
from pytest_modelprof.units import format_bytes

__all__ = [
    "MemoryStats",
    "AllocationTracker",
    "measure_memory",
    "storage_bytes",
    "collector_paused",
]

MemoryMode = Literal["forward", "backward", "training_step"]
MemoryMethod = Literal["tracked", "cuda"]
Phase = Literal["forward", "backward", "optimizer"]

#: Breakdown keys, in the order reports list them.
BREAKDOWN_KEYS = ("parameters", "buffers", "inputs", "gradients", "optimizer_state", "activations")


class MemoryStats(BaseModel):
    """Measured peak memory of one call and what it was made of at that moment (bytes)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    method: MemoryMethod
    mode: MemoryMode
    device: str
    peak_bytes: int
    peak_new_bytes: int
    forward_peak_bytes: int
    allocated_bytes: int
    allocations: int
    breakdown: dict[str, int]

    def describe(self) -> str:
        """One line: the peak and its non-zero parts."""
        parts = ", ".join(
            f"{k} {format_bytes(self.breakdown[k])}"
            for k in BREAKDOWN_KEYS
            if self.breakdown.get(k)
        )
        return f"peak {format_bytes(self.peak_bytes)} ({self.method}, {self.mode}): {parts}"


def storage_bytes(tensors: Iterable[torch.Tensor]) -> int:
    """Bytes of the distinct storages behind ``tensors`` (tied weights and views count once)."""
    seen: set[int] = set()
    total = 0
    for t in tensors:
        st = t.untyped_storage()
        key = storage_key(st)
        if key not in seen:
            seen.add(key)
            total += st.nbytes()
    return total


class AllocationTracker(TorchDispatchMode):  # type: ignore[no-untyped-call]
    """Tracks the bytes of tensor storages created inside the block and alive at once.

    ``known`` tensors (weights, inputs) exist before the block and are never counted. Set
    :attr:`phase` to tag allocations (``"forward"``, ``"backward"``, ``"optimizer"``).
    """

    def __init__(self, known: Iterable[torch.Tensor] = ()) -> None:
        super().__init__()  # type: ignore[no-untyped-call]
        self._known: dict[int, Any] = {}
        for t in known:
            st = t.untyped_storage()
            self._known[storage_key(st)] = StorageWeakRef(st)
        # storage key -> (weak ref, bytes, phase at allocation)
        self._live: dict[int, tuple[Any, int, Phase]] = {}
        self.phase: Phase = "forward"
        self.live_bytes = 0
        self.peak_bytes = 0
        self.forward_peak_bytes = 0
        self.allocated_bytes = 0
        self.allocations = 0
        self._peak_live: list[tuple[int, Any, int, Phase]] = []

    def __torch_dispatch__(
        self, func: Any, types: Any, args: tuple[Any, ...] = (), kwargs: Any = None
    ) -> Any:
        out = func(*args, **(kwargs or {}))
        self._sweep()
        outs: list[torch.Tensor] = []
        flat_tensors(out, outs)
        grew = False
        for t in outs:
            if t.device.type == "meta":
                continue
            st = t.untyped_storage()
            key = storage_key(st)
            if key in self._live:
                continue
            known = self._known.get(key)
            if known is not None and not known.expired():
                continue
            nbytes = st.nbytes()
            if nbytes == 0:
                continue
            self._live[key] = (StorageWeakRef(st), nbytes, self.phase)
            self.live_bytes += nbytes
            self.allocated_bytes += nbytes
            self.allocations += 1
            grew = True
        if grew and self.live_bytes > self.peak_bytes:
            self.peak_bytes = self.live_bytes
            self._peak_live = [(k, ref, n, ph) for k, (ref, n, ph) in self._live.items()]
        if self.phase == "forward":
            self.forward_peak_bytes = max(self.forward_peak_bytes, self.live_bytes)
        return out

    def _sweep(self) -> None:
        dead = [k for k, (ref, _, _) in self._live.items() if ref.expired()]
        for k in dead:
            self.live_bytes -= self._live.pop(k)[1]

    def peak_breakdown(
        self, gradients: Iterable[torch.Tensor] = (), optimizer_state: Iterable[torch.Tensor] = ()
    ) -> dict[str, int]:
        """Split the peak into gradients, optimizer state and activations (everything else).

        ``gradients`` and ``optimizer_state`` are the tensors alive now; a storage that was
        live at the peak and is still one of them is counted under its name.
        """
        grad_keys = {storage_key(t.untyped_storage()) for t in gradients}
        state_keys = {storage_key(t.untyped_storage()) for t in optimizer_state}
        out = {"gradients": 0, "optimizer_state": 0, "activations": 0}
        for key, ref, nbytes, _phase in self._peak_live:
            alive = not ref.expired()
            if alive and key in grad_keys:
                out["gradients"] += nbytes
            elif alive and key in state_keys:
                out["optimizer_state"] += nbytes
            else:
                out["activations"] += nbytes
        return out


@contextmanager
def collector_paused(*, collect: bool = True) -> Iterator[None]:
    """Pause the cyclic garbage collector so that frees happen at the same points every run;
    ``collect``: first free what earlier garbage holds (a full pass: 0.1-0.2 s in a process
    that has imported torch and transformers)."""
    was = gc.isenabled()
    if collect:
        gc.collect()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def _optimizer_tensors(opt: torch.optim.Optimizer | None) -> list[torch.Tensor]:
    if opt is None:
        return []
    out: list[torch.Tensor] = []
    for state in opt.state.values():
        flat_tensors(dict(state), out)
    return out


def _grads(model: nn.Module) -> list[torch.Tensor]:
    return [p.grad for p in model.parameters() if p.grad is not None]


def _step_optimizer(
    optimizer: torch.optim.Optimizer | Callable[[list[nn.Parameter]], torch.optim.Optimizer] | None,
    params: list[nn.Parameter],
) -> tuple[torch.optim.Optimizer, dict[str, Any] | None]:
    """The training step's optimizer, and a given one's state to restore afterwards."""
    if optimizer is None:
        return torch.optim.SGD(params, lr=1e-3, momentum=0.9), None
    if isinstance(optimizer, torch.optim.Optimizer):
        return optimizer, copy.deepcopy(optimizer.state_dict())
    return optimizer(params), None


def measure_memory(
    model: nn.Module,
    inputs: Any,
    *,
    mode: MemoryMode = "forward",
    optimizer: torch.optim.Optimizer | Callable[[list[nn.Parameter]], torch.optim.Optimizer]
    | None = None,
    loss_fn: Callable[[Any], torch.Tensor] | None = None,
    method: MemoryMethod | Literal["auto"] = "auto",
    seed: int | None = 0,
    threads: int | None = None,
) -> MemoryStats:
    """Measure the peak memory of a forward pass, forward + backward, or a full training step.

    ``"forward"`` runs in eval mode under ``no_grad``; the other modes run in train mode with
    dropout off. Weights, buffers, gradients and a given optimizer's state are restored
    afterwards. ``method="auto"`` picks ``"cuda"`` on a CUDA model and ``"tracked"`` otherwise.
    """
    if mode not in ("forward", "backward", "training_step"):
        raise SettingsError(f"mode must be 'forward', 'backward' or 'training_step', not {mode!r}")
    device = module_device(model)
    chosen: MemoryMethod = (
        ("cuda" if device.type == "cuda" else "tracked") if method == "auto" else method
    )
    if chosen == "cuda" and device.type != "cuda":
        raise SettingsError(f"method='cuda' needs the model on a CUDA device, it is on {device}")
    batch = as_inputs(inputs)
    loss_of = loss_fn or default_loss
    params = [p for p in model.parameters() if p.requires_grad]
    opt, opt_saved = _step_optimizer(optimizer, params) if mode == "training_step" else (None, None)

    input_tensors: list[torch.Tensor] = []
    flat_tensors(batch, input_tensors)
    weights = list(model.parameters())
    buffers = list(model.buffers())
    before_grads = _grads(model)
    before_state = _optimizer_tensors(opt)
    static = {
        "parameters": storage_bytes(weights),
        "buffers": storage_bytes(buffers),
        "inputs": storage_bytes(input_tensors),
        "gradients": storage_bytes(before_grads),
        "optimizer_state": storage_bytes(before_state),
    }
    saved_values = {k: v.detach().clone() for k, v in model.state_dict(keep_vars=True).items()}
    saved_grads = {id(p): p.grad for p in model.parameters()}
    if mode != "forward":
        # Each measured step starts without gradients, as after ``zero_grad(set_to_none=True)``.
        model.zero_grad(set_to_none=True)
        static["gradients"] = 0
    known = [*weights, *buffers, *input_tensors, *_grads(model), *before_state]

    ctx = ProfilingContext(
        model, seed=seed, threads=threads, eval_mode=(mode == "forward"),
        grad=(mode != "forward"),
    )
    try:
        with ctx:
            if chosen == "tracked":
                stats = _measure_tracked(model, batch, mode, loss_of, opt, known, static)
            else:
                stats = _measure_cuda(model, batch, mode, loss_of, opt, static)
    finally:
        with torch.no_grad():
            for k, v in model.state_dict(keep_vars=True).items():
                v.copy_(saved_values[k])
        for p in model.parameters():
            p.grad = saved_grads.get(id(p))
        if opt is not None and opt_saved is not None:
            opt.load_state_dict(opt_saved)
    return stats


def _run(
    model: nn.Module,
    batch: Any,
    mode: MemoryMode,
    loss_of: Callable[[Any], torch.Tensor],
    opt: torch.optim.Optimizer | None,
    set_phase: Callable[[Phase], None],
) -> None:
    set_phase("forward")
    out = call_model(model, batch)
    if mode == "forward":
        del out
        return
    loss = loss_of(out)
    del out
    set_phase("backward")
    backward(loss)
    del loss
    if mode == "training_step" and opt is not None:
        set_phase("optimizer")
        opt.step()


def _measure_tracked(
    model: nn.Module,
    batch: Any,
    mode: MemoryMode,
    loss_of: Callable[[Any], torch.Tensor],
    opt: torch.optim.Optimizer | None,
    known: list[torch.Tensor],
    static: dict[str, int],
) -> MemoryStats:
    tracker = AllocationTracker(known)

    def set_phase(phase: Phase) -> None:
        tracker.phase = phase

    with collector_paused():
        with tracker:
            _run(model, batch, mode, loss_of, opt, set_phase)
        parts = tracker.peak_breakdown(_grads(model), _optimizer_tensors(opt))
    breakdown = {
        "parameters": static["parameters"],
        "buffers": static["buffers"],
        "inputs": static["inputs"],
        "gradients": static["gradients"] + parts["gradients"],
        "optimizer_state": static["optimizer_state"] + parts["optimizer_state"],
        "activations": parts["activations"],
    }
    return MemoryStats(
        method="tracked",
        mode=mode,
        device=str(module_device(model)),
        peak_bytes=sum(static.values()) + tracker.peak_bytes,
        peak_new_bytes=tracker.peak_bytes,
        forward_peak_bytes=tracker.forward_peak_bytes,
        allocated_bytes=tracker.allocated_bytes,
        allocations=tracker.allocations,
        breakdown=breakdown,
    )


def _measure_cuda(
    model: nn.Module,
    batch: Any,
    mode: MemoryMode,
    loss_of: Callable[[Any], torch.Tensor],
    opt: torch.optim.Optimizer | None,
    static: dict[str, int],
) -> MemoryStats:
    device = module_device(model)
    forward_peak = [0]
    with torch.cuda.device(device):
        torch.cuda.synchronize()
        gc.collect()
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()
        start = torch.cuda.memory_allocated()
        start_stats = torch.cuda.memory_stats()

        def set_phase(phase: Phase) -> None:
            if phase != "forward" and forward_peak[0] == 0:
                torch.cuda.synchronize()
                forward_peak[0] = torch.cuda.max_memory_allocated() - start

        _run(model, batch, mode, loss_of, opt, set_phase)
        torch.cuda.synchronize()
        peak_new = torch.cuda.max_memory_allocated() - start
        end_stats = torch.cuda.memory_stats()
    if mode == "forward":
        forward_peak[0] = peak_new
    new_grads = storage_bytes(_grads(model))
    new_state = storage_bytes(_optimizer_tensors(opt)) - static["optimizer_state"]
    # The allocator counts blocks, not tensors: gradients and optimizer state are taken as
    # alive at the peak (true for a training step, whose peak is in backward or the step).
    activations = max(peak_new - new_grads - max(new_state, 0), 0)
    key = "allocation.all.allocated"
    allocations = int(end_stats.get(key, 0)) - int(start_stats.get(key, 0))
    key = "allocated_bytes.all.allocated"
    allocated = int(end_stats.get(key, 0)) - int(start_stats.get(key, 0))
    breakdown = {
        "parameters": static["parameters"],
        "buffers": static["buffers"],
        "inputs": static["inputs"],
        "gradients": static["gradients"] + new_grads,
        "optimizer_state": static["optimizer_state"] + max(new_state, 0),
        "activations": activations,
    }
    return MemoryStats(
        method="cuda",
        mode=mode,
        device=str(device),
        peak_bytes=sum(static.values()) + peak_new,
        peak_new_bytes=peak_new,
        forward_peak_bytes=forward_peak[0],
        allocated_bytes=allocated,
        allocations=allocations,
        breakdown=breakdown,
    )
