"""``ProfilingContext``: a model and the process put in a known state for measuring, then restored.

Inside the block the model is in eval mode (or train mode with dropout off), the RNGs are
seeded, the intra-op thread count and grad mode are fixed. On exit every module's ``training``
flag, every RNG state (torch CPU and CUDA, Python ``random``, NumPy's global generator if NumPy
is already imported), the thread count and the grad mode are put back as they were, even when
the block raises.
"""

from __future__ import annotations

import random
import sys
from types import TracebackType
from typing import Any, Final, cast

import torch
from torch import nn

from pytest_modelprof.errors import SettingsError

__all__ = [
    "ProfilingContext",
    "training_flags",
    "restore_training_flags",
]

#: Modules whose ``training`` flag switches randomness on; ``disable_dropout`` turns them off.
DROPOUT_TYPES: Final[tuple[type[nn.Module], ...]] = (
    nn.Dropout,
    nn.Dropout1d,
    nn.Dropout2d,
    nn.Dropout3d,
    nn.AlphaDropout,
    nn.FeatureAlphaDropout,
)


def _cuda_initialized() -> bool:
    return bool(cast(Any, torch.cuda).is_initialized())


def training_flags(model: nn.Module) -> list[tuple[nn.Module, bool]]:
    """Every submodule's ``training`` flag, to put back with :func:`restore_training_flags`."""
    return [(m, m.training) for m in model.modules()]


def restore_training_flags(flags: list[tuple[nn.Module, bool]]) -> None:
    """Set each module's ``training`` flag back as :func:`training_flags` saw it."""
    for module, flag in flags:
        module.training = flag


class _Saved:
    """Everything :class:`ProfilingContext` changes, captured on entry."""

    def __init__(self, model: nn.Module | None) -> None:
        self.training = training_flags(model) if model is not None else []
        self.torch_rng = torch.get_rng_state()
        # Only touch CUDA if it is already initialised: seeding must not create a CUDA context.
        self.cuda_rng: list[torch.Tensor] | None = (
            torch.cuda.get_rng_state_all() if _cuda_initialized() else None
        )
        self.py_rng = random.getstate()
        numpy = sys.modules.get("numpy")
        self.np_rng: Any = numpy.random.get_state() if numpy is not None else None
        self.threads = torch.get_num_threads()
        self.grad = torch.is_grad_enabled()

    def restore(self) -> None:
        restore_training_flags(self.training)
        torch.set_rng_state(self.torch_rng)
        if self.cuda_rng is not None:
            torch.cuda.set_rng_state_all(self.cuda_rng)
        random.setstate(self.py_rng)
        numpy = sys.modules.get("numpy")
        if numpy is not None and self.np_rng is not None:
            numpy.random.set_state(self.np_rng)
        if torch.get_num_threads() != self.threads:
            torch.set_num_threads(self.threads)
        torch.set_grad_enabled(self.grad)


class ProfilingContext:
    """Put ``model`` and the process in a reproducible state for measuring; restore on exit.

    ``threads=None`` leaves the thread count alone; ``grad=None`` leaves grad mode alone;
    ``seed=None`` leaves the RNGs alone. ``eval_mode=False`` keeps the model in train mode (for
    a training step), and ``disable_dropout`` then switches only the dropout modules off.
    """

    def __init__(
        self,
        model: nn.Module | None = None,
        *,
        seed: int | None = 0,
        threads: int | None = 1,
        eval_mode: bool = True,
        disable_dropout: bool = True,
        grad: bool | None = False,
    ) -> None:
        if threads is not None and threads < 1:
            raise SettingsError(f"threads must be >= 1 or None, got {threads}")
        self.model = model
        self.seed = seed
        self.threads = threads
        self.eval_mode = eval_mode
        self.disable_dropout = disable_dropout
        self.grad = grad
        self._saved: _Saved | None = None

    def __enter__(self) -> ProfilingContext:
        if self._saved is not None:
            raise RuntimeError("ProfilingContext is not re-entrant; create a new one")
        self._saved = _Saved(self.model)
        try:
            self._apply()
        except BaseException:
            self._restore()
            raise
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._restore()

    def _apply(self) -> None:
        model = self.model
        if model is not None:
            if self.eval_mode:
                model.eval()
            elif self.disable_dropout:
                model.train()
                for m in model.modules():
                    if isinstance(m, DROPOUT_TYPES):
                        m.eval()
            else:
                model.train()
        if self.seed is not None:
            random.seed(self.seed)
            torch.manual_seed(self.seed)  # also seeds every CUDA device
            numpy = sys.modules.get("numpy")
            if numpy is not None:
                numpy.random.seed(self.seed)
        if self.threads is not None and torch.get_num_threads() != self.threads:
            torch.set_num_threads(self.threads)
        if self.grad is not None:
            torch.set_grad_enabled(self.grad)

    def _restore(self) -> None:
        saved, self._saved = self._saved, None
        if saved is not None:
            saved.restore()
