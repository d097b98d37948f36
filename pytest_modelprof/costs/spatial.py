"""Reductions, pooling, interpolation and sorting."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any

from pytest_modelprof.costs.pointwise import first_tensor
from pytest_modelprof.costs.registry import Args, CostRegistry, OpCost, TensorMeta, prod

__all__: list[str] = []

# Per input element: sum/mean accumulate once; var/std also subtract the mean and square;
# logsumexp subtracts the max, exponentiates and accumulates (after a max pass).
REDUCTION_FLOPS: dict[str, int] = {
    "sum": 1,
    "mean": 1,
    "nansum": 1,
    "prod": 1,
    "amax": 1,
    "amin": 1,
    "max": 1,
    "min": 1,
    "argmax": 1,
    "argmin": 1,
    "aminmax": 2,
    "any": 1,
    "all": 1,
    "cumsum": 1,
    "cumprod": 1,
    "logcumsumexp": 3,
    "norm": 2,
    "linalg_vector_norm": 2,
    "var": 3,
    "std": 3,
    "var_mean": 3,
    "std_mean": 3,
    "logsumexp": 4,
    "count_nonzero": 1,
}


def _reduction(flops: int) -> Any:
    def formula(a: Args, out: Any) -> OpCost:
        return OpCost(flops * a["self"].numel)

    formula.__name__ = f"reduction_{flops}"
    return formula


def _window(a: Args, dims: int) -> int:
    k = list(a["kernel_size"])
    return prod(k * dims if len(k) == 1 else k)


def _pool(dims: int) -> Any:
    # Max pooling compares, average pooling adds and divides: one FLOP per window element.
    def formula(a: Args, out: Any) -> OpCost:
        t = first_tensor(out)
        return OpCost((t.numel if t is not None else 0) * _window(a, dims))

    formula.__name__ = f"pool{dims}d"
    return formula


def adaptive_window_total(in_size: int, out_size: int) -> int:
    """Sum of window lengths of an adaptive pool along one dim (windows may overlap)."""
    total = 0
    for i in range(out_size):
        start = (i * in_size) // out_size
        end = math.ceil((i + 1) * in_size / out_size)
        total += end - start
    return total


def _adaptive_work(in_shape: tuple[int, ...], out_shape: tuple[int, ...], dims: int) -> int:
    # The last `dims` dimensions are pooled (the op's name says how many, not the rank: an
    # unbatched (C, H, W) input to a 2-d pool has no batch dimension).
    work = prod(out_shape[:-dims])
    for i_size, o_size in zip(in_shape[-dims:], out_shape[-dims:], strict=True):
        work *= adaptive_window_total(int(i_size), int(o_size))
    return work


def _adaptive(dims: int) -> Any:
    def formula(a: Args, out: Any) -> OpCost:
        t = first_tensor(out)
        return OpCost(_adaptive_work(a["self"].shape, t.shape, dims) if t is not None else 0)

    formula.__name__ = f"adaptive_pool{dims}d"
    return formula


def _pool_backward(a: Args, out: Any) -> OpCost:
    # Scatter (max) or spread (avg) each gradient element over its window.
    g = a["grad_output"]
    k = a["kernel_size"]
    window = prod(k) if isinstance(k, Sequence) and k else 1
    return OpCost(g.numel * window)


def _adaptive_backward(dims: int) -> Any:
    # Spread each gradient element over its window: the forward's window sums, again.
    def formula(a: Args, out: Any) -> OpCost:
        return OpCost(_adaptive_work(a["self"].shape, a["grad_output"].shape, dims))

    formula.__name__ = f"adaptive_pool{dims}d_backward"
    return formula


# Output-element cost of interpolation: 2^d multiplies + (2^d - 1) adds for d-linear,
# 16 taps for bicubic (16 + 15); nearest copies.
def _interp(flops: int) -> Any:
    def formula(a: Args, out: Any) -> OpCost:
        t = first_tensor(out)
        return OpCost(flops * (t.numel if t is not None else 0))

    formula.__name__ = f"interpolate_{flops}"
    return formula


def grid_sampler(a: Args, out: Any) -> OpCost:
    per = {0: 7, 1: 0, 2: 31}.get(int(a["interpolation_mode"]), 7)  # bilinear, nearest, bicubic
    t = first_tensor(out)
    return OpCost(per * (t.numel if t is not None else 0))


def cudnn_grid_sampler(a: Args, out: Any) -> OpCost:
    # cuDNN's sampler has no mode argument: it is always bilinear (7 per output, as above).
    t = first_tensor(out)
    return OpCost(7 * (t.numel if t is not None else 0))


def _sort_cost(x: TensorMeta, dim: int) -> OpCost:
    # Comparison sort along `dim`: n * ceil(log2 n) comparisons per row.
    n = x.shape[dim % x.ndim] if x.ndim else 1
    return OpCost(x.numel * max(1, math.ceil(math.log2(max(n, 2)))))


def sort(a: Args, out: Any) -> OpCost:
    return _sort_cost(a["self"], int(a.get("dim", -1)))


def msort(a: Args, out: Any) -> OpCost:
    return _sort_cost(a["self"], 0)  # msort sorts along the first dimension


def histc(a: Args, out: Any) -> OpCost:
    # NB: per element: subtract min, scale to a bin, two range checks, increment its count = 5;
    # with min == max the data's own min and max are found first, 2 more per element.
    x = a["self"]
    lo, hi = a.get("min", 0), a.get("max", 0)
    return OpCost(x.numel * (5 + (2 if lo == hi else 0)))


def register(reg: CostRegistry) -> None:
    import torch

    aten = torch.ops.aten
    for name, flops in REDUCTION_FLOPS.items():
        if hasattr(aten, name):
            reg.register(getattr(aten, name), family="reduction")(_reduction(flops))
    for dims in (1, 2, 3):
        _register_pools(reg, aten, dims)
    _register_interpolation(reg, aten)
    reg.register(aten.grid_sampler_2d, family="interpolate")(grid_sampler)
    reg.register(aten.cudnn_grid_sampler, family="interpolate")(cudnn_grid_sampler)


def _existing(aten: Any, names: Iterable[str]) -> list[Any]:
    """The packets of ``names`` this torch has."""
    return [getattr(aten, n) for n in names if hasattr(aten, n)]


def _register_pools(reg: CostRegistry, aten: Any, dims: int) -> None:
    """Pools of ``dims`` spatial dimensions: plain, adaptive, and their backward ops."""
    ops = _existing(aten, (f"max_pool{dims}d_with_indices", f"avg_pool{dims}d", f"max_pool{dims}d"))
    if dims == 2 and hasattr(aten, "mkldnn_max_pool2d"):
        ops.append(aten.mkldnn_max_pool2d)
    reg.register(*ops, family="pool")(_pool(dims))
    adaptive = _existing(aten, (f"_adaptive_avg_pool{dims}d", f"adaptive_max_pool{dims}d"))
    if adaptive:
        reg.register(*adaptive, family="pool")(_adaptive(dims))
    backward = _existing(
        aten, (f"max_pool{dims}d_with_indices_backward", f"avg_pool{dims}d_backward")
    )
    if backward:
        reg.register(*backward, family="pool")(_pool_backward)
    adaptive_backward = _existing(
        aten, (f"_adaptive_avg_pool{dims}d_backward", f"adaptive_max_pool{dims}d_backward")
    )
    if adaptive_backward:
        reg.register(*adaptive_backward, family="pool")(_adaptive_backward(dims))


def _register_interpolation(reg: CostRegistry, aten: Any) -> None:
    """Upsampling ops and their backward ops, FLOPs per output element by mode."""
    interp = {
        "upsample_nearest1d": 0,
        "upsample_nearest2d": 0,
        "upsample_nearest3d": 0,
        "_upsample_nearest_exact1d": 0,
        "_upsample_nearest_exact2d": 0,
        "_upsample_nearest_exact3d": 0,
        "upsample_linear1d": 3,
        "upsample_bilinear2d": 7,
        "_upsample_bilinear2d_aa": 7,
        "upsample_trilinear3d": 15,
        "upsample_bicubic2d": 31,
        "_upsample_bicubic2d_aa": 31,
    }
    for name, flops in interp.items():
        if hasattr(aten, name):
            reg.register(getattr(aten, name), family="interpolate")(_interp(flops))
        backward_name = name + "_backward"
        if hasattr(aten, backward_name):
            reg.register(getattr(aten, backward_name), family="interpolate")(_interp(flops))
    reg.register(aten.sort, aten.topk, aten.kthvalue, aten.median, family="sort")(sort)
    reg.register(aten.msort, family="sort")(msort)
    reg.register(aten.histc, family="reduction")(histc)
