"""torchvision's detection ops, registered by name so that torchvision is never imported here."""

from __future__ import annotations

from typing import Any

from pytest_modelprof.costs.pointwise import first_tensor
from pytest_modelprof.costs.registry import Args, CostRegistry, OpCost

__all__: list[str] = []

IOU_FLOPS = 10  # intersection box (4 min/max), its area (2 sub, 1 mul), union (2), divide (1)
BILINEAR_SAMPLE_FLOPS = 7


def nms(a: Args, out: Any) -> OpCost:
    # NB: worst case, every pair of boxes is compared once.
    n = a["dets"].shape[0]
    return OpCost(IOU_FLOPS * n * (n - 1) // 2)


def roi_align(a: Args, out: Any) -> OpCost:
    # NB: with sampling_ratio <= 0 the sample grid depends on box sizes (data); 2x2 is assumed.
    ratio = int(a.get("sampling_ratio", 2))
    samples = ratio * ratio if ratio > 0 else 4
    t = first_tensor(out)
    return OpCost((t.numel if t is not None else 0) * samples * (BILINEAR_SAMPLE_FLOPS + 1))


def roi_pool(a: Args, out: Any) -> OpCost:
    t = first_tensor(out)
    return OpCost(t.numel if t is not None else 0)


def register(reg: CostRegistry) -> None:
    reg.add("torchvision::nms", nms, family="detection")
    reg.add("torchvision::roi_align", roi_align, family="detection")
    reg.add("torchvision::ps_roi_align", roi_align, family="detection")
    reg.add("torchvision::roi_pool", roi_pool, family="detection")
    reg.add("torchvision::ps_roi_pool", roi_pool, family="detection")
