"""The one table of optimizer names, shared by ``modelprof memory`` (the estimate, the marker)
and ``modelprof bench`` (the measurement), so a name means one optimizer everywhere."""

from __future__ import annotations

from typing import Any

from pytest_modelprof.errors import SettingsError, did_you_mean

__all__ = ["OPTIMIZER_ARGS", "build_optimizer", "check_optimizer"]

#: The ``torch.optim`` class of each name and what differs from its defaults: ``sgd`` is torch's
#: plain SGD; momentum is ``sgd-momentum``.
OPTIMIZER_ARGS: dict[str, tuple[str, dict[str, float]]] = {
    "sgd": ("SGD", {"lr": 1e-3}),
    "sgd-momentum": ("SGD", {"lr": 1e-3, "momentum": 0.9}),
    "adam": ("Adam", {"lr": 1e-3}),
    "adamw": ("AdamW", {"lr": 1e-3}),
}


def check_optimizer(name: str) -> None:
    """Refuse a name :data:`OPTIMIZER_ARGS` lacks, before any work is spent on it."""
    if name not in OPTIMIZER_ARGS:
        raise SettingsError(f"unknown optimizer {name!r}{did_you_mean(name, OPTIMIZER_ARGS)} "
                            f"(the optimizers: {', '.join(OPTIMIZER_ARGS)})")


def build_optimizer(name: str, params: Any, **impl: bool) -> Any:
    """The optimizer :data:`OPTIMIZER_ARGS` names, over ``params`` (``impl``: ``foreach=`` or
    ``fused=``; without it, torch's choice)."""
    import torch

    check_optimizer(name)
    kind, args = OPTIMIZER_ARGS[name]
    return getattr(torch.optim, kind)(params, **args, **impl)
