"""The GPU kernels a capture stands for: class, FLOPs, bytes at a precision, GEMM shape.

Eager mode follows what eager PyTorch launches: one kernel per non-view op, one flash-attention
kernel per ``scaled_dot_product_attention`` call (the capture decomposes it into the math path so
that counts do not depend on the device), and under autocast one cast kernel per fp32 operand of
an fp16 op (weights included: the autocast cache lives for one ``autocast`` block) and per fp16
operand of an op that autocast runs in fp32. Fused mode takes the subgraphs the partition finds
(what a compiler fuses into one kernel).

NB: the capture runs in the model's own dtype (fp32 for a timm model). Under a precision the
element sizes are rewritten: autocast's rules (``torch.amp``: matmuls and convolutions in fp16,
norms, softmax and transcendental ops in fp32, other ops in the widest dtype of their inputs)
give each op's output dtype from its inputs', following the capture's dataflow.
"""

from __future__ import annotations

import linecache
from collections.abc import Sequence
from dataclasses import dataclass

from pytest_modelprof.analysis.partition import partition
from pytest_modelprof.capture.record import Capture, OpRecord
from pytest_modelprof.costs.registry import TensorMeta

__all__ = [
    "CLASSES",
    "TENSOR_CORE_CLASSES",
    "Kernel",
    "site_texts",
    "eager_kernels",
    "fused_kernels",
]

#: Kernel classes, each with its own efficiency curve.
CLASSES: tuple[str, ...] = (
    "matmul",  # mm, addmm, bmm: tensor cores
    "conv",  # dense convolution: tensor cores (cuDNN implicit GEMM)
    "conv_grouped",  # 1 < groups < channels
    "conv_depthwise",  # one input channel per group: CUDA cores, memory-bound
    "attention",  # fused scaled-dot-product attention
    "elementwise",  # activations, arithmetic, casts' maths
    "norm",  # batch/layer/group norm
    "reduction",  # sums, means, softmax, pooling
    "gather",  # indexing, gather/scatter, embedding, interpolation, sort
    "copy",  # clone, cat, pad, contiguous, autocast casts, fills
)
#: Classes whose FLOPs run at the tensor-core peak of the precision (the others at fp32 CUDA-core
#: peak).
TENSOR_CORE_CLASSES = frozenset({"matmul", "conv", "conv_grouped", "attention"})

_FLOATS = {"float32": 4, "float16": 2, "bfloat16": 2, "float64": 8}
# autocast's fp16 list at the ATen level the capture records (linear is addmm/mm; matmul is
# mm/bmm; conv2d is convolution).
_AUTOCAST_LOW = frozenset(
    {
        "convolution",
        "_convolution",
        "cudnn_convolution",
        "cudnn_convolution_transpose",
        "conv_tbc",
        "addmm",
        "mm",
        "bmm",
        "baddbmm",
        "addbmm",
        "addmv",
        "mv",
        "prelu",
        "_prelu_kernel",
        "_grouped_mm",
        "_cudnn_rnn",
        "_thnn_fused_lstm_cell",
        "_thnn_fused_gru_cell",
        "lstm",
        "gru",
        "rnn_tanh",
        "rnn_relu",
        "_scaled_dot_product_flash_attention",
        "_scaled_dot_product_efficient_attention",
        "_scaled_dot_product_cudnn_attention",
        "_flash_attention_forward",
        "_efficient_attention_forward",
    }
)
# autocast's fp32 list (and fp32-unless-a-dtype-is-given list).
_AUTOCAST_FP32 = frozenset(
    {
        "acos",
        "asin",
        "cosh",
        "erfinv",
        "exp",
        "expm1",
        "log",
        "log10",
        "log2",
        "log1p",
        "reciprocal",
        "rsqrt",
        "sinh",
        "tan",
        "pow",
        "softplus",
        "native_layer_norm",
        "native_group_norm",
        "_fused_rms_norm",
        "_softmax",
        "_log_softmax",
        "_safe_softmax",
        "cumsum",
        "cumprod",
        "prod",
        "sum",
        "linalg_vector_norm",
        "norm",
        "logsumexp",
        "dist",
        "cdist",
        "_cdist_forward",
        "renorm",
        "binary_cross_entropy_with_logits",
        "nll_loss",
        "mse_loss",
        "l1_loss",
        "smooth_l1_loss",
        "kl_div",
    }
)
# Ops whose output keeps the dtype of their first input whatever the others are.
_FIRST_INPUT = frozenset(
    {
        "native_batch_norm",
        "_native_batch_norm_legit",
        "_native_batch_norm_legit_no_training",
        "cudnn_batch_norm",
        "_batch_norm_no_update",
        "_batch_norm_with_update",
        "_to_copy",
        "index_put",
        "index_put_",
        "_index_put_impl_",
        "copy_",
        "masked_fill",
        "masked_fill_",
        "scatter",
        "scatter_",
        "scatter_add",
        "gather",
        "index",
        "index_select",
    }
)
_GATHER = frozenset(
    {
        "gather",
        "index",
        "index_select",
        "index_put",
        "index_put_",
        "_index_put_impl_",
        "scatter",
        "scatter_",
        "scatter_add",
        "scatter_add_",
        "scatter_reduce",
        "embedding",
        "take",
        "masked_select",
        "masked_scatter",
        "roll",
        "grid_sampler_2d",
        "cudnn_grid_sampler",
        "take_along_dim",
        "flip",
        "im2col",
        "col2im",
        "unfold_backward",
    }
)
_NO_KERNEL_CREATION = frozenset(
    {
        "empty",
        "empty_like",
        "empty_strided",
        "new_empty",
        "new_empty_strided",
        "lift_fresh",
        "scalar_tensor",
    }
)
_SDPA_TEXT = "scaled_dot_product_attention"


@dataclass(frozen=True, slots=True)
class Kernel:
    """One GPU kernel (or ``count`` identical ones): what a prediction prices."""

    cls: str
    flops: float
    bytes: float
    gemm_k: int = 0  # reduction length per output element (0: not a GEMM)
    gemm_n: int = 0  # output columns per group
    op: str = ""
    module: str = ""
    count: int = 1
    phase: str = "forward"


def site_texts(sites: Sequence[str]) -> list[str]:
    """The source line of each ``file:line`` call site (fused attention is found by its line)."""
    out = []
    for site in sites:
        path, _, line = site.rpartition(":")
        out.append(linecache.getline(path, int(line)).strip() if line.isdigit() else "")
    return out


def _base(op: str) -> str:
    """``aten.convolution.default`` -> ``convolution``."""
    parts = op.split(".")
    return parts[1] if len(parts) >= 3 else parts[-1]


def _numel(meta: TensorMeta) -> int:
    n = 1
    for d in meta.shape:
        n *= int(d)
    return n


class _Sizes:
    """Element size of every op's main output at a precision, following the dataflow."""

    def __init__(self, ops: Sequence[OpRecord], precision: str) -> None:
        self.ops = ops
        self.precision = precision
        self.amp = precision in ("amp", "amp-bf16")
        self.low = 4 if precision in ("fp32", "tf32") else 2
        self.out: list[int] = [0] * len(ops)

    def leaf(self, meta: TensorMeta) -> int:
        """A parameter, model input or constant: fp32 stays fp32 under autocast."""
        if meta.dtype not in _FLOATS:
            return meta.itemsize
        return 4 if self.amp else self.low

    def of_input(self, op: OpRecord, j: int) -> int:
        meta = op.inputs[j]
        if meta.dtype not in _FLOATS:
            return meta.itemsize
        producers = op.input_producers
        p = producers[j] if j < len(producers) else -1
        if p < 0 or self.out[p] == 0:
            return self.leaf(meta)
        return self.out[p]

    def decide(self, op: OpRecord, base: str) -> tuple[list[int], int, list[int]]:
        """(input sizes as the kernel reads them, output size, sizes of inputs to cast)."""
        ins = [self.of_input(op, j) for j in range(len(op.inputs))]
        floats = [j for j, m in enumerate(op.inputs) if m.dtype in _FLOATS]
        if not self.amp:
            out = self.low if op.outputs and op.outputs[0].dtype in _FLOATS else 0
            return ins, out, []
        casts: list[int] = []
        if base in _AUTOCAST_LOW or base in _AUTOCAST_FP32:
            want = 2 if base in _AUTOCAST_LOW else 4
            for j in floats:
                if ins[j] != want:
                    casts.append(j)
                    ins[j] = want
            out = want
        elif base in _FIRST_INPUT and floats:
            out = ins[floats[0]]
        else:
            # Type promotion: 0-dim tensors do not widen a dimensioned one.
            dims = [ins[j] for j in floats if op.inputs[j].shape]
            out = max(dims or [ins[j] for j in floats] or [4])
        if not (op.outputs and op.outputs[0].dtype in _FLOATS):
            out = 0
        return ins, out, casts


def _ratio(metas: Sequence[TensorMeta], sizes: Sequence[int]) -> float:
    """New bytes over captured bytes of ``metas`` at element ``sizes``."""
    new = old = 0
    for meta, size in zip(metas, sizes, strict=False):
        n = _numel(meta)
        new += n * size
        old += n * meta.itemsize
    return new / old if old else 1.0


def _conv_shape(op: OpRecord) -> tuple[str, int, int]:
    """(class, GEMM K, GEMM N) of a convolution from its input and weight shapes."""
    if len(op.inputs) < 2 or len(op.inputs[1].shape) < 3:
        return "conv", 0, 0
    x, w = op.inputs[0].shape, op.inputs[1].shape
    per_group = int(w[1])
    groups = max(1, int(x[1]) // per_group) if len(x) > 1 and per_group else 1
    k = per_group
    for d in w[2:]:
        k *= int(d)
    n = max(1, int(w[0]) // groups)
    if groups > 1 and per_group == 1:
        return "conv_depthwise", k, n
    return ("conv_grouped" if groups > 1 else "conv"), k, n


def _matmul_shape(op: OpRecord) -> tuple[int, int]:
    mats = [m for m in op.inputs if len(m.shape) >= 2]
    if len(mats) < 2:
        return 1, 1
    return int(mats[-2].shape[-1]), int(mats[-1].shape[-1])


def classify_op(op: OpRecord) -> tuple[str | None, int, int]:
    """The kernel class of one op (``None``: it launches no kernel) and its GEMM K, N."""
    if op.is_view or op.family == "view":
        return None, 0, 0
    base = _base(op.op)
    fam = op.family
    if fam == "creation" and (base in _NO_KERNEL_CREATION or op.bytes_written == 0):
        return None, 0, 0
    if fam is not None and op.flops == 0 and op.bytes_read == 0 and op.bytes_written == 0:
        return None, 0, 0  # asserts, metadata checks
    if fam == "conv":
        return _conv_shape(op)
    if fam in ("matmul", "rnn"):
        k, n = _matmul_shape(op)
        return "matmul", k, n
    if fam == "attention":
        return "attention", 0, 0
    if fam == "norm":
        return "norm", 0, 0
    if fam in ("reduction", "softmax", "pool"):
        return "reduction", 0, 0
    if base in _GATHER or fam in ("embedding", "interpolate", "detection", "sort"):
        return "gather", 0, 0
    if fam in ("copy", "creation"):
        return "copy", 0, 0
    return "elementwise", 0, 0


def _attention_groups(ops: Sequence[OpRecord], texts: Sequence[str]) -> list[list[int]]:
    """Runs of consecutive ops called from one ``scaled_dot_product_attention`` line."""
    groups: list[list[int]] = []
    current: list[int] = []
    key: tuple[int, str] | None = None
    for op in ops:
        site = op.site
        if current and site < 0 and op.is_view:
            current.append(op.index)  # a view between the attention's ops (no call site)
            continue
        is_sdpa = 0 <= site < len(texts) and _SDPA_TEXT in texts[site] and op.family != "attention"
        k = (site, op.module) if is_sdpa else None
        if k is not None and k == key and op.phase == "forward":
            current.append(op.index)
            continue
        if current:
            groups.append(current)
        current = [op.index] if k is not None and op.phase == "forward" else []
        key = k if current else None
    if current:
        groups.append(current)
    for g in groups:
        while g and ops[g[-1]].site < 0:
            g.pop()
    # A run without a matrix product is not the decomposed attention (a mask built on that line).
    return [g for g in groups if sum(1 for i in g if ops[i].family == "matmul") >= 2]


def eager_kernels(ops: Sequence[OpRecord], texts: Sequence[str], precision: str) -> list[Kernel]:
    """The kernels eager PyTorch launches for ``ops`` at ``precision``."""
    sizes = _Sizes(ops, precision)
    group_of: dict[int, list[int]] = {}
    for g in _attention_groups(ops, texts):
        for i in g:
            group_of[i] = g
    kernels: list[Kernel] = []
    for op in ops:
        group = group_of.get(op.index)
        if group is not None:
            if op.index == group[-1]:
                kernels.append(_attention_kernel(ops, group, sizes))
            continue
        base = _base(op.op)
        ins, out, casts = sizes.decide(op, base)
        sizes.out[op.index] = out if not op.is_view else sizes.of_input(op, 0) if op.inputs else 0
        cls, k, n = classify_op(op)
        if cls is None:
            continue
        for j in casts:
            numel = _numel(op.inputs[j])
            kernels.append(
                Kernel(
                    "copy", 0.0, numel * 6.0, op="autocast cast", module=op.module, phase=op.phase
                )
            )
        read = op.bytes_read * _ratio(op.inputs, ins)
        written = float(op.bytes_written)
        if op.outputs and out:
            written = op.bytes_written * out / op.outputs[0].itemsize
        kernels.append(
            Kernel(
                cls,
                float(op.flops),
                float(read + written),
                k,
                n,
                op=base,
                module=op.module,
                phase=op.phase,
            )
        )
    return kernels


def _attention_kernel(ops: Sequence[OpRecord], group: list[int], sizes: _Sizes) -> Kernel:
    """One flash-attention kernel: reads q, k, v (and a mask) once, writes the output once."""
    members = set(group)
    size = 4 if sizes.precision in ("fp32", "tf32") else 2
    read = 0
    flops = 0
    # Every edge from outside the run is one operand the kernel reads (q, k, v, a mask), also
    # when it enters through a view (k transposed, v expanded).
    for i in group:
        op = ops[i]
        flops += op.flops
        for j, meta in enumerate(op.inputs):
            p = op.input_producers[j] if j < len(op.input_producers) else -1
            if p not in members:
                read += _numel(meta) * (size if meta.dtype in _FLOATS else meta.itemsize)
    last = ops[group[-1]]
    written = sum(_numel(m) for m in last.outputs[:1]) * size
    for i in group:
        sizes.out[i] = size
    return Kernel(
        "attention",
        float(flops),
        float(read + written),
        op="scaled_dot_product_attention",
        module=last.module,
        phase=last.phase,
    )


def fused_kernels(capture: Capture, precision: str) -> list[Kernel]:
    """One kernel per subgraph of the partition (what a fusing compiler launches)."""
    ops = capture.ops
    eager = eager_kernels(ops, site_texts(capture.sites), precision)
    ratio = sum(k.bytes for k in eager) / max(1, sum(op.memory for op in ops if not op.is_view))
    kernels = []
    for sub in partition(capture).subgraphs:
        anchor = next((ops[i] for i in sub.ops if classify_op(ops[i])[0] is not None), None)
        if anchor is None:
            continue
        cls, k, n = classify_op(anchor)
        if sub.kind == "attention":
            cls = "attention"
        kernels.append(
            Kernel(
                cls or "elementwise",
                float(sub.flops),
                float(sub.memory) * ratio,
                k,
                n,
                op=_base(anchor.op),
                module=sub.module,
                phase=anchor.phase,
            )
        )
    return kernels
