"""Matrix products and convolutions: the multiply-accumulate ops. FLOPs = 2 x MACs (+ bias adds)."""

from __future__ import annotations

from typing import Any

from pytest_modelprof.costs.registry import Args, CostRegistry, OpCost, TensorMeta, numel, prod

__all__ = ["register", "conv_macs"]


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
    reg.register(aten.convolution, aten._convolution, family="conv")(convolution)
    reg.register(aten.cudnn_convolution, family="conv")(cudnn_convolution)
    reg.register(aten.cudnn_convolution_transpose, family="conv")(cudnn_convolution_transpose)
    reg.register(aten.convolution_backward, family="conv")(convolution_backward)
