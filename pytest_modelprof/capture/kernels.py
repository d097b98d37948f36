"""Canonical kernels during a capture, so that counts do not depend on device or grad mode."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import torch

__all__ = ["canonical_kernels", "value_checks_off"]

# The switches are process-wide; captures that overlap (other threads, nesting) share one
# setting: the first to enter saves the caller's switches, the last to leave restores them.
# They are set through the public flag functions, not ``sdpa_kernel``, whose exit must run
# in the thread (context) that entered it.
_LOCK = threading.Lock()
_depth = 0
_saved: list[tuple[Callable[[bool], None], bool]] = []


def _switches() -> list[tuple[Callable[[], bool], Callable[[bool], None], bool]]:
    """(getter, setter, canonical value) of each switch."""
    cuda = torch.backends.cuda
    return [
        (torch.backends.mha.get_fastpath_enabled, torch.backends.mha.set_fastpath_enabled, False),
        (cuda.flash_sdp_enabled, cuda.enable_flash_sdp, False),
        (cuda.mem_efficient_sdp_enabled, cuda.enable_mem_efficient_sdp, False),
        (cuda.cudnn_sdp_enabled, cuda.enable_cudnn_sdp, False),
        (cuda.math_sdp_enabled, cuda.enable_math_sdp, True),
    ]


@contextmanager
def canonical_kernels() -> Iterator[None]:
    """Make the op sequence independent of device and grad mode.

    The nn.MultiheadAttention/TransformerEncoderLayer fast path and the fused SDPA kernels are
    chosen differently on CPU, CUDA and meta, and only under no_grad. Routing attention through
    the reference (math) decomposition gives the same ops, hence the same counts, everywhere.

    NB: the switches are process-wide: while any capture runs, another thread's model also
    takes the math path (slower, same results). They are restored when the last one ends.
    """
    global _depth
    with _LOCK:
        if _depth == 0:
            for get, put, canonical in _switches():
                _saved.append((put, get()))
                put(canonical)
        _depth += 1
    try:
        yield
    finally:
        with _LOCK:
            _depth -= 1
            if _depth == 0:
                for put, previous in reversed(_saved):
                    put(previous)
                _saved.clear()


#: transformers skips its ``torch_compilable_check`` input checks while this variable is "1".
TRANSFORMERS_CHECKS_VARIABLE = "TRANSFORMERS_DISABLE_TORCH_CHECK"


@contextmanager
def value_checks_off() -> Iterator[None]:
    """Skip transformers' input checks that read tensor values, for meta and fake captures.

    ``torch_compilable_check(n_image_tokens * width == features.numel())`` (LLaVA, PaliGemma)
    calls ``bool()`` on a tensor; meta and fake tensors hold no values, so the capture fell
    back to real weights (gigabytes) only to compare two counts. The checks validate inputs
    and change no op that runs; real tensors still check. A user's own setting is kept.
    """
    if os.environ.get(TRANSFORMERS_CHECKS_VARIABLE) is not None:
        yield
        return
    os.environ[TRANSFORMERS_CHECKS_VARIABLE] = "1"
    try:
        yield
    finally:
        os.environ.pop(TRANSFORMERS_CHECKS_VARIABLE, None)
