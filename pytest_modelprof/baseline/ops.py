"""What changed in a model's ops: the calls of each op per layer, baseline against current.

A count that grew says *that* the model changed; the op whose calls changed, its layer and the
line of model code that called it say *what* changed. :func:`explain_ops` puts that list in the
detail of the row that explains a verdict, so the failure message and every report show it.
Pure and torch-free.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Final

from pytest_modelprof.baseline.check import Check
from pytest_modelprof.baseline.compare import Comparison

if TYPE_CHECKING:
    from pytest_modelprof.baseline.document import BaselineDocument
    from pytest_modelprof.schema import OpCalls

__all__ = [
    "op_sites",
    "op_change_text",
    "explain_ops",
]

#: Layer -> op -> the lines of model code that called it (``"net.py:12"``).
OpSites = Mapping[str, Mapping[str, Sequence[str]]]
#: At most this many changed ops are listed (the detail says how many more there are).
MAX_SHOWN: Final = 8
#: At most this many call sites are named per op.
MAX_SITES: Final = 3


def op_label(op: str) -> str:
    """``aten.relu.default`` -> ``aten::relu``; another overload keeps its name
    (``aten::add.Tensor``)."""
    namespace, _, rest = op.partition(".")
    if not rest:
        return op
    name, _, overload = rest.partition(".")
    return f"{namespace}::{name}" + (f".{overload}" if overload and overload != "default" else "")


def op_sites(calls: Iterable[OpCalls]) -> dict[str, dict[str, list[str]]]:
    """A profile's ``op_calls`` as layer -> op -> call sites."""
    out: dict[str, dict[str, list[str]]] = {}
    for row in calls:
        out.setdefault(row.module, {})[row.op] = list(row.sites)
    return out


@dataclass(frozen=True)
class OpChange:
    """One op whose calls in one layer changed; ``baseline`` is 0 for an op that is new there."""

    module: str
    type: str
    op: str
    baseline: int
    current: int
    sites: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {
            "module": self.module,
            "type": self.type,
            "op": op_label(self.op),
            "baseline": self.baseline,
            "current": self.current,
            "sites": list(self.sites),
        }


def op_changes(
    current: Mapping[str, Mapping[str, int]],
    baseline: Mapping[str, Mapping[str, int]],
    *,
    types: Mapping[str, str] | None = None,
    sites: OpSites | None = None,
) -> list[OpChange]:
    """Every (layer, op) whose calls differ: more calls first, those with a line of model code
    first among them, then by how many calls changed."""
    types = types or {}
    sites = sites or {}
    out = []
    for module in sorted(set(current) | set(baseline)):
        now, before = current.get(module, {}), baseline.get(module, {})
        for op in sorted(set(now) | set(before)):
            n, b = now.get(op, 0), before.get(op, 0)
            if n != b:
                where = tuple(sites.get(module, {}).get(op, ()))
                out.append(OpChange(module, types.get(module, "?"), op, b, n, where))
    out.sort(key=lambda c: (c.current < c.baseline, not c.sites, -abs(c.current - c.baseline)))
    return out


def op_change_text(change: Mapping[str, Any]) -> str:
    """``aten::relu ×1 → ×2 in (model) (SmallCNN) at net.py:17, net.py:20``: one entry of a
    row's ``ops`` detail as a line."""
    text = (
        f"{change.get('op')} \u00d7{change.get('baseline')} \u2192 \u00d7{change.get('current')}"
        f" in {change.get('module')} ({change.get('type')})"
    )
    sites = change.get("sites")
    where = [str(s) for s in sites] if isinstance(sites, list) else []
    if where:
        more = len(where) - MAX_SITES
        text += " at " + ", ".join(where[:MAX_SITES]) + (f" and {more} more" if more > 0 else "")
    return text


def _target(checks: Sequence[Check]) -> int | None:
    """The row the op list explains: the first failed count, else the first failed row, else
    the first count that improved or warned."""
    wanted: tuple[Callable[[Check], bool], ...] = (
        lambda c: c.failed and c.kind in ("delta", "budget"),
        lambda c: c.failed,
        lambda c: c.verdict in ("improved", "warning") and c.kind == "delta",
    )
    for accepts in wanted:
        for i, check in enumerate(checks):
            if accepts(check):
                return i
    return None


def explain_ops(
    comparison: Comparison,
    current: BaselineDocument,
    baseline: BaselineDocument | None,
    sites: OpSites | None = None,
) -> Comparison:
    """``comparison`` with the ops whose calls changed in the detail (``op_changes``,
    ``op_changes_more``) of the row that explains its verdict; unchanged when a side did not
    record its op calls. (The uncounted row's own ``ops`` detail is another list.)"""
    if baseline is None or current.op_calls is None or baseline.op_calls is None:
        return comparison
    target = _target(comparison.checks)
    if target is None:
        return comparison
    types = {row.name: row.type for row in (*baseline.layers, *current.layers)}
    changes = op_changes(current.op_calls, baseline.op_calls, types=types, sites=sites)
    if not changes:
        return comparison
    checks = list(comparison.checks)
    row = checks[target]
    detail = {
        **row.detail,
        "op_changes": [c.to_json() for c in changes[:MAX_SHOWN]],
        "op_changes_more": max(len(changes) - MAX_SHOWN, 0),
    }
    checks[target] = replace(row, detail=detail)
    return replace(comparison, checks=tuple(checks))
