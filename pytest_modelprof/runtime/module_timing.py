"""Per-module forward times, measured on real tensors with module hooks.

:func:`time_modules` hooks every module of the model, runs the forward ``warmup`` times
untimed and ``rounds`` times timed, and reports for each module path, averaged over the
rounds, its time per forward (``forward_ms``: its calls in one forward summed, children
included) and its *self* time (``self_ms``: the same less the time of its direct child calls).
The clock is the one :func:`pytest_modelprof.runtime.timing.timer_for` picks for the device:
``time.perf_counter_ns`` on the host, CUDA events on a CUDA device (recorded in the hooks
without synchronising; read once the forward has finished).

Module paths follow the capture's rule, so they match the nodes of the module graph: ``""`` is
the model itself, and a module object that sits at several paths (ultralytics shares one SiLU
across its Conv blocks) is billed to the path under the module that called it.

The hooks cost time of their own, and it is included: each module call takes two clock reads
and a little bookkeeping. ``benchmarks/bench_module_timing.py`` measures how much that is
(hooked vs unhooked forward of resnet50, in the same run).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from typing import Any, Literal

import torch
from torch import nn
from torch.utils.hooks import RemovableHandle

from pytest_modelprof._tensors import as_inputs, call_model, module_device
from pytest_modelprof.errors import ModelInputError, SettingsError
from pytest_modelprof.runtime.context import ProfilingContext
from pytest_modelprof.runtime.timing import CudaEventTimer, timer_for
from pytest_modelprof.schema import Frozen
from pytest_modelprof.textfit import Column, cut_middle, layout_table

__all__ = [
    "ModuleTimings",
    "time_modules",
    "format_module_times",
]

#: How reports print the model's own path ``""`` (the module graph's name for it too).
ROOT_LABEL = "(model)"

# One forward's figures per path: (ms of its calls summed, self ms summed, calls).
_Round = dict[str, tuple[float, float, int]]


class ModuleTime(Frozen):
    """One module path: its time per forward, averaged over the timed rounds (ms)."""

    path: str
    type: str
    calls: int  # calls per forward
    forward_ms: float  # its calls summed, children included
    min_ms: float  # forward_ms of the fastest round
    self_ms: float  # its calls less their direct child calls

    @property
    def label(self) -> str:
        """The path, or ``(model)`` for the model itself."""
        return self.path or ROOT_LABEL


class ModuleTimings(Frozen):
    """Every module that ran, in first-call order; the model itself (``""``) comes first."""

    rounds: int
    warmup: int
    timer: str
    device: str
    modules: list[ModuleTime]

    @property
    def forward_ms(self) -> float:
        """The hooked forward of the whole model (the root's ``forward_ms``)."""
        return self.modules[0].forward_ms if self.modules else 0.0

    def by_path(self) -> dict[str, ModuleTime]:
        """``{path: ModuleTime}``."""
        return {m.path: m for m in self.modules}

    def forward_ms_by_path(self) -> dict[str, float]:
        """``{path: forward_ms}``: what a module graph's nodes carry with ``--timed``."""
        return {m.path: m.forward_ms for m in self.modules}

    def slowest(
        self, n: int = 10, *, by: Literal["self_ms", "forward_ms"] = "self_ms"
    ) -> list[ModuleTime]:
        """The ``n`` modules with the largest ``by`` (self time by default: where work is)."""
        if by == "self_ms":
            return sorted(self.modules, key=lambda m: (-m.self_ms, m.path))[:n]
        return sorted(self.modules, key=lambda m: (-m.forward_ms, m.path))[:n]


# -- clocks ---------------------------------------------------------------------------------

class _HostMarks:
    """Host wall-clock marks: the clock of ``PerfCounterTimer``."""

    name = "perf_counter"

    def mark(self) -> Any:
        return time.perf_counter_ns()

    def elapsed_ms(self, start: Any, end: Any) -> float:
        return float(end - start) / 1e6

    def finish(self) -> None:
        """Nothing is queued on the host."""


class _CudaMarks:
    """CUDA events on the current stream: the clock of ``CudaEventTimer``."""

    name = "cuda_event"

    def __init__(self, device: torch.device) -> None:
        self.device = device

    def mark(self) -> Any:
        cuda: Any = torch.cuda  # Event() is untyped upstream
        event = cuda.Event(enable_timing=True)
        event.record()
        return event

    def elapsed_ms(self, start: Any, end: Any) -> float:
        return float(start.elapsed_time(end))

    def finish(self) -> None:
        torch.cuda.synchronize(self.device)


def _marks_for(device: torch.device) -> _HostMarks | _CudaMarks:
    timer = timer_for(device)
    if isinstance(timer, CudaEventTimer):
        return _CudaMarks(timer.device)
    return _HostMarks()


# -- hooks ----------------------------------------------------------------------------------

class _Recorder:
    """Module hooks that mark the start and end of every call and attribute it to a path.

    The hooks run inside the timed forward, so they do as little as possible: append to flat
    lists (path, caller, start mark, end mark per call); everything else waits for
    :meth:`take_round`, after the forward.
    """

    def __init__(self, model: nn.Module, marks: _HostMarks | _CudaMarks) -> None:
        self.marks = marks
        # On the host, the clock itself (one call less per mark than the method).
        self._mark: Callable[[], Any] = (
            time.perf_counter_ns if isinstance(marks, _HostMarks) else marks.mark
        )
        by_id: dict[int, list[str]] = {}
        self.types: dict[str, str] = {}
        for name, module in model.named_modules(remove_duplicate=False):
            by_id.setdefault(id(module), []).append(name)
            self.types[name] = type(module).__name__
        # The common case, one path per module, is one dict lookup in the hook.
        self._single = {k: v[0] for k, v in by_id.items() if len(v) == 1}
        self._shared = {k: v for k, v in by_id.items() if len(v) > 1}
        self._modules = [m for _, m in model.named_modules()]
        self._stack: list[int] = []  # ids of the calls running now, innermost last
        # The calls of one forward, in start order: path, caller's id (-1: none), marks.
        self.paths: list[str] = []
        self.parents: list[int] = []
        self.starts: list[Any] = []
        self.ends: list[Any] = []
        self.order: dict[str, int] = {}  # first-call order of paths, over every round
        self._handles: list[RemovableHandle] = []

    def _shared_path(self, paths: list[str]) -> str:
        if self._stack:
            parent = self.paths[self._stack[-1]]
            prefix = parent + "." if parent else ""
            for path in paths:
                if path.startswith(prefix) and "." not in path[len(prefix):]:
                    return path
        return paths[0]

    def _pre(self, module: nn.Module, args: Any) -> None:
        path = self._single.get(id(module))
        if path is None:
            path = self._shared_path(self._shared[id(module)])
        stack = self._stack
        self.parents.append(stack[-1] if stack else -1)
        stack.append(len(self.paths))
        self.paths.append(path)
        self.ends.append(None)
        # The mark comes last so that the bookkeeping above is billed to the caller.
        self.starts.append(self._mark())

    def _post(self, module: nn.Module, args: Any, output: Any) -> None:
        end = self._mark()
        if self._stack:
            self.ends[self._stack.pop()] = end

    def __enter__(self) -> _Recorder:
        for m in self._modules:
            self._handles.append(m.register_forward_pre_hook(self._pre))
            self._handles.append(m.register_forward_hook(self._post, always_call=True))
        return self

    def __exit__(self, *exc: object) -> None:
        for h in self._handles:
            h.remove()
        self._handles.clear()
        self._stack.clear()
        self._reset()

    def _reset(self) -> None:
        self.paths, self.parents, self.starts, self.ends = [], [], [], []

    def take_round(self) -> _Round:
        """The figures of the forward just run, per path; starts a new round."""
        self.marks.finish()
        elapsed = self.marks.elapsed_ms
        spans = [
            elapsed(start, end) if end is not None else 0.0
            for start, end in zip(self.starts, self.ends, strict=True)
        ]
        inner = [0.0] * len(spans)
        for i, parent in enumerate(self.parents):
            if parent >= 0:
                inner[parent] += spans[i]
        out: _Round = {}
        for i, path in enumerate(self.paths):
            self.order.setdefault(path, len(self.order))
            total, own, n = out.get(path, (0.0, 0.0, 0))
            out[path] = (total + spans[i], own + max(spans[i] - inner[i], 0.0), n + 1)
        self._reset()
        return out


# -- measuring ------------------------------------------------------------------------------

def time_modules(
    model: nn.Module,
    inputs: Any,
    *,
    rounds: int = 10,
    warmup: int = 2,
    seed: int | None = 0,
    threads: int | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> ModuleTimings:
    """Per-module forward times of ``model`` on ``inputs`` (real tensors), over ``rounds``.

    Runs in eval mode under ``no_grad`` inside a :class:`ProfilingContext` (seeded; the model's
    mode and the RNGs are restored, the hooks removed). ``threads=None`` keeps torch's thread
    count. ``progress`` is called with ``(done, total)`` after each forward, warm-up included.
    """
    if rounds < 1:
        raise SettingsError(f"rounds must be >= 1, got {rounds}")
    if warmup < 0:
        raise SettingsError(f"warmup must be >= 0, got {warmup}")
    batch = as_inputs(inputs)
    device = module_device(model)
    if device.type == "meta":
        raise ModelInputError(
            "per-module times need real tensors, and the model is on the meta device; build it "
            "on cpu or cuda"
        )
    marks = _marks_for(device)
    recorder = _Recorder(model, marks)
    per_round: list[_Round] = []
    total = warmup + rounds
    with ProfilingContext(model, seed=seed, threads=threads, eval_mode=True, grad=False):
        with recorder:
            for i in range(total):
                call_model(model, batch)
                sample = recorder.take_round()
                if i >= warmup:
                    per_round.append(sample)
                if progress is not None:
                    progress(i + 1, total)
    return _summarise(recorder, per_round, rounds, warmup, marks.name, str(device))


def _summarise(
    recorder: _Recorder,
    per_round: Sequence[_Round],
    rounds: int,
    warmup: int,
    timer: str,
    device: str,
) -> ModuleTimings:
    empty = (0.0, 0.0, 0)
    modules = []
    for path in sorted(recorder.order, key=recorder.order.__getitem__):
        values = [r.get(path, empty) for r in per_round]
        totals = [v[0] for v in values]
        modules.append(ModuleTime(
            path=path,
            type=recorder.types.get(path, "?"),
            calls=max(v[2] for v in values),
            forward_ms=math.fsum(totals) / len(totals),
            min_ms=min(totals),
            self_ms=math.fsum(v[1] for v in values) / len(values),
        ))
    return ModuleTimings(rounds=rounds, warmup=warmup, timer=timer, device=device,
                         modules=modules)


def format_module_times(timings: ModuleTimings, *, top: int = 10, width: int = 100) -> str:
    """The ``top`` modules by self time, one line each, with their share of the forward, in
    ``width`` columns (module names cut in the middle, then types)."""
    whole = timings.forward_ms or 1.0
    columns = [Column("module"), Column("type"), Column("calls", ">"), Column("self", ">"),
               Column("total", ">"), Column("share", ">")]
    rows = [
        [m.label, cut_middle(m.type, 20), str(m.calls), f"{m.self_ms:.3f} ms",
         f"{m.forward_ms:.3f} ms", f"{100 * m.self_ms / whole:.1f} %"]
        for m in timings.slowest(top)
    ]
    table = layout_table(columns, rows, width, shrink=((0, 24), (1, 10), (0, 8)), indent="  ")
    return "\n".join(table.lines) + "\n"
