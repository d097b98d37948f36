"""Cross-check our counts against fvcore's ``FlopCountAnalysis`` in fvcore's own convention.

fvcore counts one "flop" per multiply-add, so its total is compared with our ``total_macs``.
It needs real tensors (it JIT-traces the model), so the model is built on the CPU with random
weights and run on real inputs; our side profiles the very same module. The two counters still
differ by design: fvcore also counts batch-norm and adaptive-pool elements as multiply-adds,
and skips ops it has no handle for (``unsupported_ops()``, such as
``aten::scaled_dot_product_attention``), which the comparison reports rather than hides.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import nn

from pytest_modelprof.capture.kernels import canonical_kernels
from pytest_modelprof.capture.real import real_model_and_inputs
from pytest_modelprof.errors import ModelprofError
from pytest_modelprof.models import resolve
from pytest_modelprof.profile import profile_model
from pytest_modelprof.runtime.context import restore_training_flags, training_flags

__all__ = ["FvcoreComparison", "compare_with_fvcore", "load_fvcore"]

INSTALL_HINT = "pip install 'pytest-modelprof[fvcore]'"


@dataclass(frozen=True)
class FvcoreComparison:
    """Our multiply-add count beside fvcore's for one model and input."""

    model: str
    input_shape: tuple[int, ...] | None
    ours_macs: int
    fvcore_macs: int
    unsupported_ops: dict[str, int] = field(default_factory=dict)  # fvcore skipped these
    fvcore_by_operator: dict[str, int] = field(default_factory=dict)
    ours_uncounted: dict[str, int] = field(default_factory=dict)  # we have no formula for these

    @property
    def difference(self) -> int:
        """Ours minus fvcore's, in MACs."""
        return self.ours_macs - self.fvcore_macs

    @property
    def relative_difference(self) -> float:
        """``|ours - fvcore| / fvcore``; 0 when both are 0 and infinite when only fvcore is."""
        if self.fvcore_macs == 0:
            return 0.0 if self.ours_macs == 0 else float("inf")
        return abs(self.difference) / self.fvcore_macs

    @property
    def agreement(self) -> float:
        """``1 - relative_difference``, floored at 0 (1.0 is identical counts)."""
        return max(0.0, 1.0 - self.relative_difference)

    def within(self, tolerance: float) -> bool:
        """Whether the relative difference is at most ``tolerance`` (0.05 is 5 %)."""
        return self.relative_difference <= tolerance


def load_fvcore() -> Any:
    """Import ``fvcore.nn.FlopCountAnalysis`` lazily; a clear error when the extra is missing."""
    try:
        with warnings.catch_warnings():
            # fvcore.nn scripts a focal loss at import time: torch warns that jit.script is
            # deprecated, which pytest's filterwarnings=error would turn into a failure.
            warnings.simplefilter("ignore", FutureWarning)
            warnings.simplefilter("ignore", DeprecationWarning)
            warnings.simplefilter("ignore", UserWarning)
            from fvcore.nn import FlopCountAnalysis
    except ImportError as exc:
        raise ModelprofError(
            f"the fvcore cross-check needs fvcore, which is not installed ({exc}); {INSTALL_HINT}"
        ) from exc
    return FlopCountAnalysis


def _shape_of(args: tuple[Any, ...]) -> tuple[int, ...] | None:
    first = args[0] if args else None
    return tuple(int(s) for s in first.shape) if isinstance(first, torch.Tensor) else None


def compare_with_fvcore(
    model: nn.Module | str,
    input_shape: Sequence[int] | None = None,
    *,
    inputs: Any = None,
    name: str | None = None,
    **arch_kwargs: Any,
) -> FvcoreComparison:
    """Count ``model`` with fvcore and with us on the same module and inputs.

    ``model`` is a registry name (built on the CPU with random weights) or an ``nn.Module``
    (on the CPU, with real weights; both counters run a copy of it). Inputs come from
    ``inputs`` (a tensor or a tuple of tensors), else from ``input_shape``, else from the
    registry's default for a name.
    Raises :class:`ModelprofError` when fvcore is missing or cannot trace the model.
    """
    flop_count_analysis = load_fvcore()
    # A name is built on the CPU with random weights, a module is copied with its weights (fvcore
    # runs the copy, never the user's module); inputs are resolved as profile_model does.
    module, (args, kwargs) = real_model_and_inputs(
        model,
        input_shape=input_shape,
        inputs=inputs,
        purpose="the fvcore cross-check",
        **arch_kwargs,
    )
    shape: tuple[int, ...] | None = tuple(input_shape) if input_shape is not None else None
    if isinstance(model, str):
        spec = resolve(model)
        label = name or spec.name
        shape = shape or (tuple(spec.default_input_shape) if spec.default_input_shape else None)
    else:
        label = name or type(model).__name__
    if kwargs:
        raise ModelprofError(
            f"{label}: fvcore traces positional inputs only, but the model takes keyword inputs "
            f"({', '.join(sorted(kwargs))})"
        )

    flags = training_flags(module)
    module.eval()
    try:
        ours = profile_model(module, inputs=args, name=label)
        # The same kernels our capture uses: without this, eval + no_grad sends
        # nn.MultiheadAttention down its fused fast path, which fvcore would skip whole
        # (projections included), instead of the reference path our counts describe.
        with torch.no_grad(), canonical_kernels(), warnings.catch_warnings():
            # JIT tracing warns (TracerWarning, deprecations) on many models; those warnings are
            # about tracing, not about the counts, and must not fail a filterwarnings=error run.
            warnings.simplefilter("ignore")
            analysis = (
                flop_count_analysis(module, args)
                .unsupported_ops_warnings(False)
                .uncalled_modules_warnings(False)
            )
            analysis.tracer_warnings("none")
            try:
                total = int(analysis.total())
            except Exception as exc:
                raise ModelprofError(
                    f"{label}: fvcore could not trace the model: {type(exc).__name__}: "
                    f"{str(exc).strip().splitlines()[0] if str(exc).strip() else ''}"
                ) from exc
            unsupported = {str(k): int(v) for k, v in analysis.unsupported_ops().items()}
            by_operator = {str(k): int(v) for k, v in analysis.by_operator().items()}
    finally:
        restore_training_flags(flags)
    return FvcoreComparison(
        model=label,
        input_shape=_shape_of(args) or shape,
        ours_macs=ours.total_macs,
        fvcore_macs=total,
        unsupported_ops=dict(sorted(unsupported.items())),
        fvcore_by_operator=dict(sorted(by_operator.items())),
        ours_uncounted={u.op: u.count for u in ours.uncounted_ops},
    )
