"""transformers' attention-mask checks on tensors without data, answered as the real input would.

transformers skips the causal mask when it can see that the input has no padding and no packed
sequences: SDPA then runs with ``is_causal`` (and, for grouped-query attention, ``enable_gqa``
instead of K/V expanded by ``repeat_kv``). To see it, it reads values (``mask.all()``); on a fake
tensor it cannot, so its checks (guarded by ``is_tracing``, true for a fake tensor) build the
mask, and a step on stand-ins takes the masked path that a real unpadded input does not: more
bytes per layer. Under :func:`unpadded_masks` those checks run their ops and every value they
read is answered as an unpadded, unpacked input answers it (each asks "is everything
attended?": yes). :func:`has_padding` says when real inputs are padded or packed; then nothing
is answered and the mask is built on stand-ins as on the real input.
"""

from __future__ import annotations

import functools
import inspect
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import torch

from pytest_modelprof._compat import TorchDispatchMode, has_data
from pytest_modelprof._tensors import Inputs

__all__ = ["has_padding", "unpadded_masks"]

_MASKS = "transformers.masking_utils"
_READS = (torch.ops.aten._local_scalar_dense.default, torch.ops.aten.is_nonzero.default)


def has_padding(inputs: Inputs) -> bool:
    """Whether real inputs make transformers build its mask: a 2-D ``attention_mask`` with a
    zero (padding) or ``position_ids`` that restart (packed sequences). Values of tensors
    without data are unknown: no padding is assumed."""
    mask = _readable(inputs[1].get("attention_mask"))
    if mask is not None and mask.dim() == 2 and not bool(mask.bool().all()):
        return True
    positions = _readable(inputs[1].get("position_ids"))
    return (
        positions is not None
        and positions.dim() >= 1
        and not bool((positions.diff(dim=-1) == 1).all())
    )


def _readable(value: Any) -> torch.Tensor | None:
    return value if isinstance(value, torch.Tensor) and has_data(value) else None


@dataclass
class MaskChecks:
    """How many of transformers' mask checks were answered, and how deep the answering is."""

    answered: int = 0
    depth: int = 0


class _Unpadded(TorchDispatchMode):  # type: ignore[no-untyped-call]
    """A boolean read of a tensor without data answers True; every other op goes on."""

    def __torch_dispatch__(
        self, func: Any, types: Any, args: tuple[Any, ...] = (), kwargs: Any = None
    ) -> Any:
        if func in _READS and args[0].dtype == torch.bool and not has_data(args[0]):
            return True
        return func(*args, **(kwargs or {}))


@contextmanager
def unpadded_masks() -> Iterator[MaskChecks]:
    """transformers' mask checks (its functions that ask ``is_tracing``) answer as an
    unpadded real input does; nothing changes where transformers is not imported."""
    checks = MaskChecks()
    module = sys.modules.get(_MASKS)
    is_tracing: Callable[..., bool] | None = getattr(module, "is_tracing", None)
    if module is None or is_tracing is None:
        yield checks
        return
    originals = {
        name: fn
        for name, fn in vars(module).items()
        if inspect.isfunction(fn)
        and fn.__module__ == _MASKS
        and name != "is_tracing"
        and "is_tracing" in fn.__code__.co_names
    }

    def seen_as_real(tensor: Any = None) -> bool:
        # Inside a check only: elsewhere (a copy imported by name) a fake tensor still counts
        # as tracing, and transformers reads nothing. Masks and positions only: a scalar (a
        # static cache's offset) is no padding, and its value is not "yes".
        if (
            checks.depth
            and isinstance(tensor, torch.Tensor)
            and tensor.dim() > 0
            and not has_data(tensor)
        ):
            tensor = None
        return is_tracing(tensor)

    def answered(fn: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(fn)
        def check(*args: Any, **kwargs: Any) -> Any:
            checks.answered += 1
            checks.depth += 1
            try:
                with _Unpadded():  # type: ignore[no-untyped-call]
                    return fn(*args, **kwargs)
            finally:
                checks.depth -= 1

        return check

    setattr(module, "is_tracing", seen_as_real)  # noqa: B010 - an attribute mypy cannot see
    for name, fn in originals.items():
        setattr(module, name, answered(fn))
    try:
        yield checks
    finally:
        setattr(module, "is_tracing", is_tracing)  # noqa: B010
        for name, fn in originals.items():
            setattr(module, name, fn)
