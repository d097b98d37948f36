"""Every layer whose costs changed against the baseline, as the detail of the FLOPs row.

The judge adds it (:func:`with_layer_changes`); the report's sortable layer table and per-layer
FLOPs chart format it and compute nothing. Which layers *explain* a failed row is that row's own
``detail["layers"]`` (:func:`~pytest_modelprof.baseline.compare.compare`), a different list.
Pure and torch-free.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Final

from pytest_modelprof.baseline.metrics import active_metrics

if TYPE_CHECKING:
    from pytest_modelprof.baseline.compare import Comparison
    from pytest_modelprof.baseline.document import BaselineDocument, BaselineLayer

__all__ = ["layer_detail", "layer_row_metric", "with_layer_changes"]

#: The per-layer costs a baseline stores (``BaselineLayer``'s numbers), in the entries' order.
LAYER_COSTS: Final = ("flops", "macs", "params", "traffic")


def _costs(layer: BaselineLayer | None) -> dict[str, int] | None:
    return {k: int(getattr(layer, k)) for k in LAYER_COSTS} if layer is not None else None


def _delta(entry: Mapping[str, Any], cost: str) -> int:
    before, after = entry["before"] or {}, entry["after"] or {}
    return int(after.get(cost, 0)) - int(before.get(cost, 0))


def _change(before: dict[str, int] | None, after: dict[str, int] | None) -> str:
    """``added``, ``removed``, ``grew`` (more FLOPs, or as many and more traffic), ``shrank``."""
    if before is None:
        return "added"
    if after is None:
        return "removed"
    flops = after["flops"] - before["flops"]
    more_traffic = after["traffic"] > before["traffic"]
    return "grew" if flops > 0 or (flops == 0 and more_traffic) else "shrank"


def layer_changes(
    current: Sequence[BaselineLayer], baseline: Sequence[BaselineLayer]
) -> list[dict[str, Any]]:
    """Each layer whose costs differ (or that exists on one side only), largest FLOPs change
    first, then largest memory change, then by name: ``{"name", "type", "change", "before",
    "after"}``, a side ``None`` where the layer is absent."""
    before = {row.name: row for row in baseline}
    after = {row.name: row for row in current}
    out = []
    for name in sorted(set(before) | set(after)):
        old, new = _costs(before.get(name)), _costs(after.get(name))
        if old == new:
            continue
        row = after.get(name) or before[name]
        out.append(
            {
                "name": name,
                "type": row.type,
                "change": _change(old, new),
                "before": old,
                "after": new,
            }
        )
    out.sort(key=lambda d: (-abs(_delta(d, "flops")), -abs(_delta(d, "traffic")), d["name"]))
    return out


def layer_detail(
    current: Sequence[BaselineLayer], baseline: Sequence[BaselineLayer]
) -> dict[str, Any]:
    """The detail the layer row carries: every changed layer, and how many the baseline has."""
    return {"layer_changes": layer_changes(current, baseline), "baseline_layers": len(baseline)}


def layer_row_metric() -> str | None:
    """The metric whose row carries the layer changes: the table's first with a per-layer
    field (FLOPs), as the report's table and chart sort by it."""
    return next((m.name for m in active_metrics() if m.layer_field), None)


def with_layer_changes(
    comparison: Comparison, current: BaselineDocument, baseline: BaselineDocument | None
) -> Comparison:
    """``comparison`` with :func:`layer_detail` on the layer row; unchanged without a
    baseline (nothing to diff) or without that row."""
    name = layer_row_metric()
    if baseline is None or name is None:
        return comparison
    detail = layer_detail(current.layers, baseline.layers)
    checks = tuple(
        replace(c, detail={**c.detail, **detail}) if c.metric == name else c
        for c in comparison.checks
    )
    return replace(comparison, checks=checks)
