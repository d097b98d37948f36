"""The per-layer diff of a profile against its baseline: rows for the sortable table.

Every layer that changed, for the table and the FLOPs chart; which layers explain a verdict
is the row's ``detail["layers"]`` (see ``view._grown_layers``), never recomputed here."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from pytest_modelprof.baseline.compare import format_change
from pytest_modelprof.baseline.document import BaselineLayer, baseline_layers
from pytest_modelprof.gate.results import ProfileResult
from pytest_modelprof.report._format import (
    change_of,
    sign_css,
    signed_count,
    sort_key,
)
from pytest_modelprof.report.model import (
    MAX_LAYER_ROWS,
    Cell,
    LayerRow,
    LayerTable,
)
from pytest_modelprof.units import format_bytes, format_count


@dataclass(frozen=True)
class LayerDiff:
    name: str
    type: str
    before: BaselineLayer | None
    after: BaselineLayer | None

    def value(self, attr: str, which: Literal["before", "after"]) -> int:
        row = self.before if which == "before" else self.after
        return int(getattr(row, attr)) if row is not None else 0

    def delta(self, attr: str) -> int:
        return self.value(attr, "after") - self.value(attr, "before")

    @property
    def kind(self) -> str:
        if self.before is None:
            return "added"
        if self.after is None:
            return "removed"
        return "grew" if self.delta("flops") > 0 or (
            self.delta("flops") == 0 and self.delta("memory") > 0
        ) else "shrank"



def current_rows(result: ProfileResult) -> list[BaselineLayer]:
    """The profile's layers as its baseline would store them (what the layer diff compares)."""
    return baseline_layers(result.profile) if result.profile is not None else []



def layer_diffs(result: ProfileResult) -> list[LayerDiff]:
    if result.baseline is None:
        return []
    before = {row.name: row for row in result.baseline.layers}
    after = {row.name: row for row in current_rows(result)}
    diffs = []
    for name in sorted(set(before) | set(after)):
        b, a = before.get(name), after.get(name)
        same = (
            b is not None
            and a is not None
            and (b.flops, b.macs, b.params, b.memory) == (a.flops, a.macs, a.params, a.memory)
        )
        if not same:
            row = a if a is not None else b
            diffs.append(LayerDiff(name, row.type if row is not None else "", b, a))
    diffs.sort(key=lambda d: (-abs(d.delta("flops")), -abs(d.delta("memory")), d.name))
    return diffs



def layer_name(name: str) -> str:
    return name or "<root>"



def layer_table(result: ProfileResult, diffs: Sequence[LayerDiff]) -> LayerTable:
    headers = (
        Cell("layer", "text"),
        Cell("type", "text"),
        Cell("change", "text"),
        Cell("FLOPs before", "num"),
        Cell("FLOPs after", "num"),
        Cell("\u0394 FLOPs", "num"),
        Cell("\u0394 %", "num"),
        Cell("\u0394 params", "num"),
        Cell("\u0394 memory", "num"),
    )
    if result.baseline is None:
        return LayerTable(headers, (), "No baseline to compare with: no per-layer diff.")
    total = len(result.baseline.layers)
    rows = []
    for d in diffs[:MAX_LAYER_ROWS]:
        before, after = d.value("flops", "before"), d.value("flops", "after")
        change = change_of(after, before) if d.kind not in ("added", "removed") else None
        rows.append(
            LayerRow(
                cells=(
                    Cell(layer_name(d.name), d.name),
                    Cell(d.type, d.type),
                    Cell(d.kind, d.kind),
                    Cell(format_count(before, "FLOPs") if d.before else "\u2013",
                         sort_key(before)),
                    Cell(format_count(after, "FLOPs") if d.after else "\u2013", sort_key(after)),
                    Cell(signed_count(after - before, "FLOPs", None),
                         sort_key(after - before), sign_css(after - before)),
                    Cell(format_change(change) if change is not None else d.kind,
                         sort_key(change if change is not None and math.isfinite(change)
                                   else (1e18 if d.kind == "added" else -1e18))),
                    Cell(signed_count(d.delta("params"), "", None), sort_key(d.delta("params")),
                         sign_css(d.delta("params"))),
                    Cell(signed_count(d.delta("memory"), "", format_bytes),
                         sort_key(d.delta("memory")), sign_css(d.delta("memory"))),
                ),
                css=f"layer-{d.kind}",
            )
        )
    if not diffs:
        note = f"No layer changed (of {total})."
    elif len(diffs) > MAX_LAYER_ROWS:
        note = (
            f"{len(diffs)} of {total} baseline layers changed; the {MAX_LAYER_ROWS} largest "
            f"changes are shown (the JSON results hold every layer)."
        )
    else:
        note = f"{len(diffs)} of {total} baseline layers changed. Click a column to sort."
    return LayerTable(headers, tuple(rows), note)
