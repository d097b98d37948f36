"""Elementwise ops: activations, arithmetic, comparisons, softmax and dropout.

Rule: every elementary arithmetic operation or transcendental function counts 1 FLOP per output
element. The tables below are that rule applied to each op's definition (derivation in comments).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from pytest_modelprof.costs.registry import Args, CostRegistry, OpCost, TensorMeta

__all__ = [
    "ACTIVATION_FLOPS",
    "SOFTMAX_FLOPS",
    "first_tensor",
]

# softmax(x)_i = exp(x_i - max x) / sum exp: max, subtract, exp, sum, divide.
SOFTMAX_FLOPS = 5

ACTIVATION_FLOPS: Mapping[str, int] = {
    "relu": 1,  # max(x, 0)
    "relu6": 2,  # min(max(x, 0), 6)
    "threshold": 1,
    "hardtanh": 2,  # clamp: min + max
    "leaky_relu": 2,  # compare, multiply
    "prelu": 2,
    "_prelu_kernel": 2,
    "rrelu_with_noise": 2,
    "elu": 3,  # exp, subtract, multiply
    "celu": 4,  # divide, exp, subtract, multiply
    "selu": 4,  # elu + scale
    "gelu": 5,  # x * 0.5 * (1 + erf(x / sqrt 2)): divide, erf, add, two multiplies
    "sigmoid": 4,  # 1 / (1 + exp(-x)): negate, exp, add, reciprocal
    "silu": 5,  # x * sigmoid(x)
    "tanh": 1,
    "hardsigmoid": 4,  # clamp(x + 3, 0, 6) / 6: add, min, max, divide
    "hardswish": 5,  # x * hardsigmoid(x)
    "mish": 5,  # x * tanh(softplus(x)): exp, add, log, tanh, multiply
    "softplus": 3,  # log(1 + exp(x))
    "log_sigmoid_forward": 4,
    "softshrink": 2,
    "hardshrink": 1,
    "glu": 5,  # a * sigmoid(b) on half the input
}

ARITHMETIC_FLOPS: Mapping[str, int] = {
    **{
        name: 1
        for name in (
            "add",
            "sub",
            "rsub",
            "mul",
            "div",
            "remainder",
            "fmod",
            "true_divide",
            "floor_divide",
            "neg",
            "abs",
            "sign",
            "sgn",
            "reciprocal",
            "sqrt",
            "rsqrt",
            "exp",
            "exp2",
            "expm1",
            "log",
            "log2",
            "log10",
            "log1p",
            "sin",
            "cos",
            "tan",
            "asin",
            "acos",
            "atan",
            "atan2",
            "sinh",
            "cosh",
            "asinh",
            "acosh",
            "atanh",
            "erf",
            "erfc",
            "erfinv",
            "pow",
            "square",
            "floor",
            "ceil",
            "round",
            "trunc",
            "frac",
            "clamp",
            "clamp_min",
            "clamp_max",
            "clip",
            "minimum",
            "maximum",
            "fmin",
            "fmax",
            "eq",
            "ne",
            "lt",
            "le",
            "gt",
            "ge",
            "logical_and",
            "logical_or",
            "logical_xor",
            "logical_not",
            "bitwise_and",
            "bitwise_or",
            "bitwise_xor",
            "bitwise_not",
            "where",
            "masked_fill",
            "isnan",
            "isinf",
            "isfinite",
            "nan_to_num",
            "xlogy",
            "hypot",
            "copysign",
            "heaviside",
            "signbit",
            "logit",
        )
    },
    "addcmul": 3,  # self + value * t1 * t2
    "addcdiv": 3,
    "lerp": 3,  # self + weight * (end - self)
}

# Backward of pointwise ops, per output (gradient) element.
BACKWARD_FLOPS: Mapping[str, int] = {
    "threshold_backward": 1,  # select grad where x > 0
    "hardtanh_backward": 2,
    "leaky_relu_backward": 2,
    "elu_backward": 3,
    "gelu_backward": 8,  # d/dx [x Phi(x)] = Phi(x) + x phi(x), times grad
    "sigmoid_backward": 3,  # grad * y * (1 - y)
    "silu_backward": 7,  # grad * s * (1 + x (1 - s)) with s = sigmoid(x) (4 + 3)
    "tanh_backward": 3,  # grad * (1 - y^2)
    "hardsigmoid_backward": 3,
    "hardswish_backward": 5,
    "mish_backward": 10,
    "softplus_backward": 4,
    "_softmax_backward_data": 4,  # y * (g - sum(g * y)): multiply, sum, subtract, multiply
    "_log_softmax_backward_data": 4,  # g - exp(y) * sum(g)
    "native_dropout_backward": 2,  # grad * mask * scale
    "glu_backward": 7,
    "log_sigmoid_backward": 5,
}


def first_tensor(out: Any) -> TensorMeta | None:
    """The first tensor among an op's outputs (many ops return tuples)."""
    if isinstance(out, TensorMeta):
        return out
    if isinstance(out, (tuple, list)):
        for item in out:
            found = first_tensor(item)
            if found is not None:
                return found
    return None


def per_output_element(flops: int) -> Callable[[Args, Any], OpCost]:
    """A formula charging ``flops`` per element of the (first) output."""

    def formula(a: Args, out: Any) -> OpCost:
        t = first_tensor(out)
        return OpCost(flops * (t.numel if t is not None else 0))

    formula.__name__ = f"per_output_element_{flops}"
    return formula


def add_sub(a: Args, out: Any) -> OpCost:
    """x + alpha * y: one add, plus one multiply when alpha != 1."""
    t = first_tensor(out)
    n = t.numel if t is not None else 0
    return OpCost(n * (2 if a.get("alpha", 1) != 1 else 1))


def softmax(a: Args, out: Any) -> OpCost:
    return OpCost(SOFTMAX_FLOPS * a["self"].numel)


def native_dropout(a: Args, out: Any) -> OpCost:
    # Training dropout: draw a mask and multiply by mask * 1/(1-p). Eval dropout never reaches ATen.
    if a.get("train") is False:
        return OpCost(0)
    return OpCost(2 * a["input"].numel)


def _variants(aten: Any, name: str) -> list[Any]:
    """The op and its in-place twin (``relu`` and ``relu_``), where they exist."""
    return [getattr(aten, n) for n in (name, name + "_") if hasattr(aten, n)]


def register(reg: CostRegistry) -> None:
    import torch

    aten = torch.ops.aten
    tables: list[tuple[str, Mapping[str, int]]] = [
        ("activation", ACTIVATION_FLOPS),
        ("elementwise", {k: v for k, v in ARITHMETIC_FLOPS.items() if k not in {"add", "sub"}}),
        ("backward", BACKWARD_FLOPS),
    ]
    for family, table in tables:
        for name, flops in table.items():
            ops = _variants(aten, name)
            if ops:  # an op another table already prices makes the registry raise
                reg.register(*ops, family=family)(per_output_element(flops))
    reg.register(*_variants(aten, "add"), *_variants(aten, "sub"), family="elementwise")(add_sub)
    reg.register(aten._softmax, aten._log_softmax, aten._safe_softmax, family="softmax")(softmax)
    reg.register(aten.native_dropout, family="dropout")(native_dropout)
