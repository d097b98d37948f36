"""Matrix products and convolutions: the multiply-accumulate ops. FLOPs = 2 x MACs (+ bias adds)."""

from __future__ import annotations

from typing import Any

from pytest_modelprof.costs.registry import Args, CostRegistry, OpCost, TensorMeta, numel, prod

__all__: list[str] = []


def _mac_op(macs: int, extra_flops: int = 0) -> OpCost:
    return OpCost(flops=2 * macs + extra_flops, macs=macs)


def _bias_adds(a: Args, out: TensorMeta) -> int:
    # NB: `self` of addmm/baddbmm is added once per output element (beta*self + alpha*(A@B)).
    return numel(out) if a.get("beta", 1) != 0 else 0


def mm(a: Args, out: Any) -> OpCost:
    m, k = a["self"].shape
    _, n = a["mat2"].shape
    return _mac_op(m * k * n)


def addmm(a: Args, out: Any) -> OpCost:
    m, k = a["mat1"].shape
    _, n = a["mat2"].shape
    return _mac_op(m * k * n, _bias_adds(a, out))


def bmm(a: Args, out: Any) -> OpCost:
    b, m, k = a["self"].shape
    n = a["mat2"].shape[-1]
    return _mac_op(b * m * k * n)


def baddbmm(a: Args, out: Any) -> OpCost:
    b, m, k = a["batch1"].shape
    n = a["batch2"].shape[-1]
    return _mac_op(b * m * k * n, _bias_adds(a, out))


def addbmm(a: Args, out: Any) -> OpCost:
    b, m, k = a["batch1"].shape
    n = a["batch2"].shape[-1]
    # NB: the b partial products are also summed: (b - 1) * m * n adds, plus the bias add.
    return _mac_op(b * m * k * n, (b - 1) * m * n + _bias_adds(a, out))


def mv(a: Args, out: Any) -> OpCost:
    return _mac_op(a["self"].numel)


def addmv(a: Args, out: Any) -> OpCost:
    return _mac_op(a["mat"].numel, _bias_adds(a, out))


def dot(a: Args, out: Any) -> OpCost:
    return _mac_op(a["self"].numel)


def conv_macs(
    input_shape: tuple[int, ...],
    weight_shape: tuple[int, ...],
    output_shape: tuple[int, ...],
    transposed: bool,
) -> int:
    """MACs of one convolution, any rank, grouped or not.

    Regular:    weight is (C_out, C_in/groups, *k); each output element needs
                C_in/groups * prod(k).
    Transposed: weight is (C_in, C_out/groups, *k); every *input* element scatters into
                C_out/groups * prod(k) outputs.
    """
    kernel = prod(weight_shape[2:])
    if transposed:
        return prod(input_shape) * weight_shape[1] * kernel
    return prod(output_shape) * weight_shape[1] * kernel


def grouped_mm(a: Args, out: Any) -> OpCost:
    """``_grouped_mm``: one matrix product per group (MoE experts), groups cut by ``offs``.

    ``offs`` holds the end offset of each group along the split dimension: the rows of ``self``
    (2-D x 3-D, tokens routed to experts), the contraction (2-D x 2-D) or the columns of
    ``mat2`` (3-D x 2-D); 3-D x 3-D is a plain batched product. Only the part the offsets
    cover is computed: ``offs[-1]`` along the split dimension.

    NB: with real tensors the offsets are read and the active tokens counted exactly. On meta
    or fake tensors they have no values, so the whole split dimension counts: a dense upper
    bound (every padded row routed). Bias, when given, adds once per computed output.
    """
    x, w, offs = a["self"], a["mat2"], a["offs"]

    def covered(full: int) -> int:
        data = offs.data if offs is not None else None
        return min(int(data[-1]), full) if data else full

    if x.ndim == 2 and w.ndim == 3:  # (M_total, K) x (G, K, N)
        rows = covered(x.shape[0])
        macs, outputs = rows * x.shape[1] * w.shape[2], rows * w.shape[2]
    elif x.ndim == 2 and w.ndim == 2:  # (M, K_total) x (K_total, N) -> (G, M, N)
        macs = x.shape[0] * covered(x.shape[1]) * w.shape[1]
        outputs = (offs.shape[0] if offs is not None else 1) * x.shape[0] * w.shape[1]
    elif x.ndim == 3 and w.ndim == 2:  # (G, M, K) x (K, N_total) -> (M, N_total)
        cols = covered(w.shape[1])
        macs, outputs = x.shape[1] * x.shape[2] * cols, x.shape[1] * cols
    else:  # (G, M, K) x (G, K, N): batched
        macs, outputs = prod(x.shape) * w.shape[-1], x.shape[0] * x.shape[1] * w.shape[-1]
    return _mac_op(macs, outputs if a.get("bias") is not None else 0)


def _conv(x: TensorMeta, w: TensorMeta, out: TensorMeta, transposed: bool, bias: bool) -> OpCost:
    macs = conv_macs(x.shape, w.shape, out.shape, transposed)
    return _mac_op(macs, numel(out) if bias else 0)


def convolution(a: Args, out: Any) -> OpCost:
    return _conv(a["input"], a["weight"], out, bool(a["transposed"]), a["bias"] is not None)


def cudnn_convolution(a: Args, out: Any) -> OpCost:
    # cuDNN's kernels name the input `self` and take no bias (it is a separate add).
    return _conv(a["self"], a["weight"], out, False, False)


def cudnn_convolution_transpose(a: Args, out: Any) -> OpCost:
    return _conv(a["self"], a["weight"], out, True, False)


def convolution_backward(a: Args, out: Any) -> OpCost:
    """grad_input and grad_weight each cost one forward; grad_bias sums grad_output.

    NB: groups are already inside conv_macs (the weight's second dim is C/groups), so grouped and
    depthwise convs are not over-counted by the number of groups.
    """
    grad_out, x, w = a["grad_output"], a["input"], a["weight"]
    mask = a["output_mask"]
    fwd = conv_macs(x.shape, w.shape, grad_out.shape, bool(a["transposed"]))
    macs = fwd * (int(bool(mask[0])) + int(bool(mask[1])))
    bias = grad_out.numel if mask[2] else 0
    return _mac_op(macs, bias)


def register(reg: CostRegistry) -> None:
    import torch

    aten = torch.ops.aten
    reg.register(aten.mm, family="matmul")(mm)
    reg.register(aten.addmm, family="matmul")(addmm)
    reg.register(aten.bmm, family="matmul")(bmm)
    reg.register(aten.baddbmm, family="matmul")(baddbmm)
    reg.register(aten.addbmm, family="matmul")(addbmm)
    reg.register(aten.mv, family="matmul")(mv)
    reg.register(aten.addmv, family="matmul")(addmv)
    reg.register(aten.dot, aten.vdot, family="matmul")(dot)
    grouped = [getattr(aten, n) for n in ("_grouped_mm", "_scaled_grouped_mm") if hasattr(aten, n)]
    if grouped:
        reg.register(*grouped, family="matmul", values=("offs",))(grouped_mm)
    reg.register(aten.convolution, aten._convolution, family="conv")(convolution)
    reg.register(aten.cudnn_convolution, family="conv")(cudnn_convolution)
    reg.register(aten.cudnn_convolution_transpose, family="conv")(cudnn_convolution_transpose)
    reg.register(aten.convolution_backward, family="conv")(convolution_backward)
