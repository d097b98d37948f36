"""Why a capture failed: the mode's limit, the model's own error, a rejected input, or ours.

The traceback tells where the exception started. Inside the tracer's ``__torch_dispatch__``
an ATen op failed (its kernel refused the arguments) or our own pricing code did; outside it,
Python code raised — the model's (a ``raise`` in its forward) or torch's (a functional's
argument check). An op whose meta/fake kernel refused arguments that the real kernel accepts
(a kernel that checks CUDA-only dtypes) is a limitation of the mode, found by
running that one op on small real zeros; data-dependent ops and host copies (``.item()``,
``.tolist()``, ``.numpy()``, ``nonzero``) are limitations too. Only a limitation makes the
capture try the next mode.
"""

from __future__ import annotations

import linecache
import os
import re
import sysconfig
from dataclasses import dataclass
from types import FrameType
from typing import Any, Literal

import torch

from pytest_modelprof._compat import fake_fallback_errors, view_base
from pytest_modelprof._tensors import flat_tensors
from pytest_modelprof.errors import clause

__all__ = ["Failure", "classify"]

FailureKind = Literal["limitation", "model", "rejected", "engine"]
"""``limitation``: this mode cannot run it, the next may. ``model``: the model's own code raised.
``rejected``: an op or torch function refused its arguments (a bad input, or a model bug).
``engine``: pytest-modelprof cannot capture it (a bug or an unsupported construct)."""

#: Largest operand set (bytes) the kernel probe allocates; bigger ops are assumed limitations.
PROBE_LIMIT_BYTES = 256 * 2**20

_TORCH_DIR = os.path.dirname(torch.__file__) + os.sep
_OUR_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
_STDLIB_DIR = sysconfig.get_paths()["stdlib"] + os.sep
# Site directories may lie under the standard library's; those frames are not the stdlib's.
_SITE_DIRS = tuple(
    p + os.sep for p in {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}
)
# NB: `.numpy()` on a fake tensor raises "not supported for tensor subclasses": a host copy needs
# data, like `.item()` and `.tolist()` (which fake tensors report as data-dependent).
_MODE_WORDS = re.compile(
    r"\bmeta\b|\bfake\b|faketensor|data[- ]dependent|cannot be called on meta|no data!"
    r"|numpy\(\) is not supported for tensor subclasses",
    re.IGNORECASE,
)
_DYNAMIC_SHAPE = re.compile(r"nonzero|masked_select|unique", re.IGNORECASE)
_HOP = re.compile(r"no rule registered for (?:HOP|HigherOrderOperator) (\w+)")


@dataclass(frozen=True)
class Failure:
    """One classified capture failure."""

    kind: FailureKind
    text: str  # "RuntimeError: first line of the message"
    op: str | None = None  # the ATen op that failed, when one did
    source: str | None = None  # "file.py:12 in forward: <the line>", the model's innermost frame
    at_input: bool = False  # the failing op read a model input directly
    kernel_refused: bool = False  # a meta kernel refused what the real one accepts
    dynamic_shape: bool = False  # an output whose shape depends on values (nonzero, unique)

    @property
    def fake_cannot_help(self) -> bool:
        """Fake tensors share meta kernels and cannot size value-dependent outputs either."""
        return self.kernel_refused or self.dynamic_shape


def short(exc: BaseException, limit: int = 300) -> str:
    """``Type: first line of the message`` (without its full stop: ours follows), capped at
    ``limit`` characters."""
    message = str(exc).strip()
    text = f"{type(exc).__name__}: {clause(message.splitlines()[0]) if message else ''}"
    return text if len(text) <= limit else text[: limit - 3] + "..."


def classify(
    exc: BaseException,
    mode: str,
    inputs: list[torch.Tensor],
    probe_device: torch.device,
) -> Failure:
    """Classify ``exc`` raised while capturing in ``mode`` on ``inputs``."""
    frames = _frames(exc)
    text = short(exc)
    source = _model_source(frames)
    hop = _HOP.search(str(exc))
    if hop is not None:
        return Failure("engine", f"the higher-order operator {hop.group(1)!r} cannot be traced "
                       "in eager mode", source=source)
    dispatch = _dispatch_frame(frames)
    if dispatch is None:
        if _is_mode_limit(exc):
            return Failure("limitation", text, source=source)
        raised_in = frames[-1].f_code.co_filename if frames else ""
        kind: FailureKind = "rejected" if raised_in.startswith(_TORCH_DIR) else "model"
        return Failure(kind, text, source=source)
    index, func, args, kwargs = dispatch
    op = str(func)
    if any(f.f_code.co_filename.startswith(_OUR_DIR) for f in frames[index + 1 :]):
        return Failure("engine", text, op=op, source=source)
    at_input = _reads_input(args, kwargs, inputs)
    if _is_mode_limit(exc):
        dynamic = bool(_DYNAMIC_SHAPE.search(f"{op} {exc}"))
        return Failure("limitation", text, op, source, at_input, dynamic_shape=dynamic)
    if mode != "real" and _real_kernel_accepts(func, args, kwargs, probe_device):
        why = f"{text} (the {mode} kernel of {op} refuses arguments the real kernel accepts)"
        return Failure("limitation", why, op=op, source=source, kernel_refused=True)
    return Failure("rejected", text, op=op, source=source, at_input=at_input)


def _is_mode_limit(exc: BaseException) -> bool:
    return isinstance(exc, fake_fallback_errors()) or bool(_MODE_WORDS.search(str(exc)))


def _frames(exc: BaseException) -> list[FrameType]:
    frames: list[FrameType] = []
    tb = exc.__traceback__
    while tb is not None:
        frames.append(tb.tb_frame)
        tb = tb.tb_next
    return frames


def _dispatch_frame(
    frames: list[FrameType],
) -> tuple[int, Any, tuple[Any, ...], dict[str, Any]] | None:
    """The innermost ``__torch_dispatch__`` of our tracer: its index, op and arguments."""
    for i in range(len(frames) - 1, -1, -1):
        code = frames[i].f_code
        if code.co_name == "__torch_dispatch__" and code.co_filename.startswith(_OUR_DIR):
            local = frames[i].f_locals
            return i, local.get("func"), tuple(local.get("args") or ()), local.get("kwargs") or {}
    return None


def _model_source(frames: list[FrameType]) -> str | None:
    """``file:line in function: code`` of the innermost frame outside torch and this package."""
    for frame in reversed(frames):
        path = frame.f_code.co_filename
        if _is_ours_or_torch(path):
            continue
        line = linecache.getline(path, frame.f_lineno).strip()
        where = f"{os.path.basename(path)}:{frame.f_lineno} in {frame.f_code.co_name}"
        return f"{where}: {line}" if line else where
    return None


def _is_ours_or_torch(path: str) -> bool:
    """A frame of torch, of pytest-modelprof or of the standard library."""
    if path.startswith((_TORCH_DIR, _OUR_DIR)):
        return True
    return path.startswith(_STDLIB_DIR) and not path.startswith(_SITE_DIRS)


def _reads_input(args: tuple[Any, ...], kwargs: dict[str, Any], inputs: list[torch.Tensor]) -> bool:
    ids = {id(t) for t in inputs}
    for t in flat_tensors([args, kwargs]):
        base = view_base(t)
        if id(t) in ids or (base is not None and id(base) in ids):
            return True
    return False


def _real_kernel_accepts(
    func: Any, args: tuple[Any, ...], kwargs: dict[str, Any], device: torch.device
) -> bool:
    """Does the real kernel of ``func`` accept zeros of these shapes and dtypes on ``device``?"""
    tensors = flat_tensors([args, kwargs])
    if sum(t.numel() * t.element_size() for t in tensors) > PROBE_LIMIT_BYTES:
        return True  # too big to try here; let the next mode find out

    def real(value: Any) -> Any:
        if isinstance(value, torch.Tensor):
            return torch.zeros(tuple(value.shape), dtype=value.dtype, device=device)
        if isinstance(value, torch.device):
            return device
        if isinstance(value, (list, tuple)):
            return type(value)(real(v) for v in value)
        return value

    try:
        with torch.no_grad():
            func(*real(args), **{k: real(v) for k, v in kwargs.items()})
    except Exception:
        return False
    return True
