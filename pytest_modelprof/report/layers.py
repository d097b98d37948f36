"""The layers that changed, as the judge put them on the FLOPs row: rows for the sortable
table and the FLOPs chart.

The judge diffs (``detail["layer_changes"]``, see :mod:`pytest_modelprof.baseline.layers`);
this module only reads and formats that detail. Which layers explain a verdict is another row
detail, ``detail["layers"]`` (see ``view._grown_layers``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal

from pytest_modelprof.baseline.change import format_change
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
from pytest_modelprof.results.record import ProfileResult
from pytest_modelprof.units import format_bytes, format_count

#: The judge's words for a layer's change (anything else a file holds reads "changed").
_KINDS: Final = frozenset({"added", "removed", "grew", "shrank"})


@dataclass(frozen=True)
class LayerDiff:
    """One entry of the row's ``layer_changes``; a side is ``None`` where the layer is absent."""

    name: str
    type: str
    kind: str  # added, removed, grew, shrank: the judge's word
    before: Mapping[str, int] | None
    after: Mapping[str, int] | None

    def value(self, attr: str, which: Literal["before", "after"]) -> int:
        row = self.before if which == "before" else self.after
        return int(row.get(attr, 0)) if row is not None else 0

    def delta(self, attr: str) -> int:
        return self.value(attr, "after") - self.value(attr, "before")


def _side(value: Any) -> Mapping[str, int] | None:
    """One side of an entry: its integer costs (a results file is anyone's: numbers only)."""
    if not isinstance(value, dict):
        return None
    return {
        str(k): int(v)
        for k, v in value.items()
        if isinstance(v, int) or (isinstance(v, float) and math.isfinite(v))
    }


def _kind(value: Any) -> str:
    return value if value in _KINDS else "changed"


def _layer_row(result: ProfileResult) -> Mapping[str, Any] | None:
    """The detail of the row that carries the layer changes, if one does."""
    return next(
        (c.detail for c in result.checks if isinstance(c.detail.get("layer_changes"), list)),
        None,
    )


def layer_diffs(result: ProfileResult) -> list[LayerDiff]:
    """The row's changed layers, in its order (largest FLOPs change first)."""
    detail = _layer_row(result)
    entries = detail["layer_changes"] if detail is not None else []
    return [
        LayerDiff(
            str(d.get("name", "")),
            str(d.get("type", "")),
            _kind(d.get("change")),
            _side(d.get("before")),
            _side(d.get("after")),
        )
        for d in entries
        if isinstance(d, dict)
    ]


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
    detail = _layer_row(result)
    if detail is None:
        return LayerTable(headers, (), "No baseline to compare with: no per-layer diff.")
    count = detail.get("baseline_layers")
    total = count if isinstance(count, int) else len(diffs)
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
                    Cell(
                        format_count(before, "FLOPs") if d.before is not None else "\u2013",
                        sort_key(before),
                    ),
                    Cell(
                        format_count(after, "FLOPs") if d.after is not None else "\u2013",
                        sort_key(after),
                    ),
                    Cell(
                        signed_count(after - before, "FLOPs", None),
                        sort_key(after - before),
                        sign_css(after - before),
                    ),
                    Cell(
                        format_change(change) if change is not None else d.kind,
                        sort_key(
                            change
                            if change is not None and math.isfinite(change)
                            else (1e18 if d.kind == "added" else -1e18)
                        ),
                    ),
                    Cell(
                        signed_count(d.delta("params"), "", None),
                        sort_key(d.delta("params")),
                        sign_css(d.delta("params")),
                    ),
                    Cell(
                        signed_count(d.delta("traffic"), "", format_bytes),
                        sort_key(d.delta("traffic")),
                        sign_css(d.delta("traffic")),
                    ),
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
