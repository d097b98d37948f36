"""Normalisation layers, per element of the normalised input.

  statistics  3  (accumulate x for the mean: 1; accumulate (x - mean)^2: 2)
  normalise   2  ((x - mean) * rstd)
  affine      2  (* weight + bias), when weight/bias are given
So layer/group norm and training batch norm cost 7 with affine; inference batch norm uses its
running statistics and costs 4. RMS norm: square-accumulate 2, scale 1, weight 1 = 4. Weight
norm (wav2vec2's positional convolution) costs 3 per element of ``v`` and 2 per norm.
Backward of a norm is charged twice its forward (NB: an estimate; the gradient re-reads the
statistics and needs two extra reductions).
"""

from __future__ import annotations

from typing import Any

from pytest_modelprof.costs.registry import Args, CostRegistry, OpCost

__all__ = ["LAYER_NORM_FLOPS"]

STATS, NORMALISE, AFFINE = 3, 2, 2
LAYER_NORM_FLOPS = STATS + NORMALISE + AFFINE


def _affine(a: Args) -> int:
    return AFFINE if a.get("weight") is not None or a.get("bias") is not None else 0


def batch_norm_inference(a: Args, out: Any) -> OpCost:
    return OpCost((NORMALISE + _affine(a)) * a["input"].numel)


def batch_norm(a: Args, out: Any) -> OpCost:
    # `training` decides whether statistics are computed from the batch.
    stats = STATS if a["training"] else 0
    return OpCost((stats + NORMALISE + _affine(a)) * a["input"].numel)


def batch_norm_training(a: Args, out: Any) -> OpCost:
    # _batch_norm_with_update always computes batch statistics (it has no `training` flag).
    return OpCost((STATS + NORMALISE + _affine(a)) * a["input"].numel)


def layer_norm(a: Args, out: Any) -> OpCost:
    return OpCost((STATS + NORMALISE + _affine(a)) * a["input"].numel)


def rms_norm(a: Args, out: Any) -> OpCost:
    weight = 1 if a.get("weight") is not None else 0
    return OpCost((3 + weight) * a["input"].numel)


def weight_norm(a: Args, out: Any) -> OpCost:
    # w = g * v / ||v||: square-accumulate v (2), scale v (1); per norm: sqrt and g / norm (2).
    return OpCost(3 * a["v"].numel + 2 * a["g"].numel)


def norm_backward(a: Args, out: Any) -> OpCost:
    x = a["input"]
    return OpCost(2 * (STATS + NORMALISE + AFFINE) * x.numel)


def register(reg: CostRegistry) -> None:
    import torch

    aten = torch.ops.aten
    reg.register(
        aten._native_batch_norm_legit_no_training, aten._batch_norm_no_update, family="norm"
    )(batch_norm_inference)
    reg.register(
        aten._native_batch_norm_legit,
        aten.native_batch_norm,
        aten.cudnn_batch_norm,
        aten.miopen_batch_norm,
        family="norm",
    )(batch_norm)
    reg.register(aten._batch_norm_with_update, family="norm")(batch_norm_training)
    reg.register(aten.native_layer_norm, aten.native_group_norm, family="norm")(layer_norm)
    reg.register(aten._weight_norm_interface, family="norm")(weight_norm)
    if hasattr(aten, "_fused_rms_norm"):
        reg.register(aten._fused_rms_norm, family="norm")(rms_norm)
    reg.register(
        aten.native_batch_norm_backward,
        aten.native_layer_norm_backward,
        aten.native_group_norm_backward,
        aten.cudnn_batch_norm_backward,
        aten.batch_norm_backward,
        family="norm",
    )(norm_backward)
