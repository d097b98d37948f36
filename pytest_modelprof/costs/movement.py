"""Ops that move, view, create or gather data: zero FLOPs, known, so never "uncounted".

Their memory traffic is still measured by the capture.
"""

from __future__ import annotations

from typing import Any

from pytest_modelprof.costs.pointwise import first_tensor
from pytest_modelprof.costs.registry import Args, CostRegistry, OpCost, zero_cost

__all__: list[str] = []

VIEW_OPS = (
    "view",
    "_unsafe_view",
    "reshape",
    "_reshape_alias",
    "permute",
    "transpose",
    "t",
    "expand",
    "expand_as",
    "squeeze",
    "unsqueeze",
    "select",
    "slice",
    "narrow",
    "as_strided",
    "alias",
    "detach",
    "unfold",
    "split",
    "split_with_sizes",
    "unbind",
    "chunk",
    "view_as_real",
    "view_as_complex",
    "diagonal",
    "movedim",
    "lift_fresh",
    "_conj",
    "unsafe_split",
    "unsafe_split_with_sizes",
    "flatten",
    "unflatten",
    "real",
    "imag",
)
COPY_OPS = (
    "clone",
    "_to_copy",
    "copy",
    "contiguous",
    "cat",
    "stack",
    "index_select",
    "gather",
    "scatter",
    "index",
    "index_put",
    "_index_put_impl_",
    "masked_select",
    "masked_scatter",
    "flip",
    "roll",
    "repeat",
    "repeat_interleave",
    "constant_pad_nd",
    "reflection_pad1d",
    "reflection_pad2d",
    "reflection_pad3d",
    "replication_pad1d",
    "replication_pad2d",
    "replication_pad3d",
    "pixel_shuffle",
    "pixel_unshuffle",
    "channel_shuffle",
    "native_channel_shuffle",
    "im2col",
    "col2im",
    "tril",
    "triu",
    "nonzero",
    "unique",
    "_unique2",
    "unique_dim",
    "unique_consecutive",
    "embedding",
    "slice_scatter",
    "select_scatter",
    "diagonal_scatter",
    "as_strided_scatter",
    "_local_scalar_dense",
    "item",
    "_pin_memory",
    "set_",
    "resize_",
    "_assert_async",
    "_assert_tensor_metadata",
    "_functional_assert_async",
    "sym_constrain_range_for_size",
    "tril_indices",
    "triu_indices",
    "searchsorted",
    "bucketize",
    "one_hot",
    "block_diag",
    "_reshape_copy",
    "_pack_padded_sequence",
    "_pad_packed_sequence",
    "zero_",
    "fill",
    "type_as",
    "to",
    "_linalg_check_errors",
    "split_copy",
    "view_copy",
    "permute_copy",
    "expand_copy",
    "t_copy",
    "transpose_copy",
)
CREATION_OPS = (
    "empty",
    "empty_like",
    "empty_strided",
    "zeros",
    "zeros_like",
    "ones",
    "ones_like",
    "full",
    "full_like",
    "arange",
    "linspace",
    "logspace",
    "eye",
    "scalar_tensor",
    "new_empty",
    "new_empty_strided",
    "new_zeros",
    "new_ones",
    "new_full",
    "rand",
    "rand_like",
    "randn",
    "randn_like",
    "randint",
    "randint_like",
    "randperm",
    "normal",
    "uniform",
    "bernoulli",
    "exponential_",
    "random_",
    "multinomial",
    "_efficientzerotensor",
    "lift_fresh_copy",
    "complex",
    "polar",
)


def scatter_add(a: Args, out: Any) -> OpCost:
    src = a.get("src")
    return OpCost(src.numel if src is not None else 0)


def index_add(a: Args, out: Any) -> OpCost:
    source = a["source"]
    return OpCost(source.numel * (2 if a.get("alpha", 1) != 1 else 1))


def embedding_bag(a: Args, out: Any) -> OpCost:
    # mode 0 sum, 1 mean, 2 max: one op per gathered element (mean adds a divide per output).
    weight, indices = a["weight"], a["indices"]
    gathered = indices.numel * weight.shape[-1]
    t = first_tensor(out)
    extra = t.numel if (t is not None and int(a.get("mode", 0)) == 1) else 0
    return OpCost(gathered + extra)


def embedding_backward(a: Args, out: Any) -> OpCost:
    return OpCost(a["grad_output"].numel)


def register(reg: CostRegistry) -> None:
    import torch

    aten = torch.ops.aten
    for family, names in (("view", VIEW_OPS), ("copy", COPY_OPS), ("creation", CREATION_OPS)):
        # Each op and its in-place twin (as_strided_, index_put_, squeeze_, ...). An op that
        # another table already prices makes the registry raise: no entry is silently shadowed.
        ops = [getattr(aten, v) for n in names for v in (n, n + "_") if hasattr(aten, v)]
        reg.register(*ops, family=family)(zero_cost)
    reg.register(aten.scatter_add, aten.scatter_add_, aten.scatter_reduce, family="copy")(
        scatter_add
    )
    reg.register(aten.index_add, aten.index_add_, family="copy")(index_add)
    reg.register(aten._embedding_bag, aten._embedding_bag_forward_only, family="embedding")(
        embedding_bag
    )
    reg.register(aten.embedding_dense_backward, family="embedding")(embedding_backward)
