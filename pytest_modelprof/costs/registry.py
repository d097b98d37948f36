"""The one registry of cost formulas, keyed by qualified ATen op name (``"aten::mm"``).

A formula is a pure function of the op's arguments, read *by name* from the op schema, with
every tensor replaced by a :class:`TensorMeta`. It returns an :class:`OpCost` in integer units:
``macs`` counts multiply-accumulates, ``flops`` counts floating-point operations (2 per MAC plus
whatever else the op does). Bytes are not the formulas' business: the capture measures them.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from pytest_modelprof.errors import FormulaError

__all__ = [
    "TensorMeta",
    "OpCost",
    "Formula",
    "FormulaEntry",
    "CostRegistry",
    "ZERO",
    "zero_cost",
    "numel",
    "prod",
]


@dataclass(frozen=True, slots=True)
class TensorMeta:
    """Shape, dtype and size of a tensor, detached from its storage (works for meta/fake/real)."""

    shape: tuple[int, ...]
    dtype: str
    itemsize: int
    # The values, flattened, for the few arguments a formula declares it needs (MoE offsets)
    # and only when the tensor has data (real, not meta or fake); else None.
    data: tuple[int | float, ...] | None = field(default=None, repr=False, compare=False)
    # Computed once: the capture and the analysis ask for it many times per tensor.
    numel: int = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "numel", prod(self.shape))

    @property
    def nbytes(self) -> int:
        return self.numel * self.itemsize

    @property
    def ndim(self) -> int:
        return len(self.shape)


class OpCost(NamedTuple):
    """What one op call costs. ``flops`` already includes ``2 * macs``."""

    flops: int
    macs: int = 0


ZERO = OpCost(0, 0)


def zero_cost(a: Mapping[str, Any], out: Any) -> OpCost:
    """The formula of ops that do no arithmetic (views, copies, creation); the capture skips
    converting their arguments."""
    return ZERO

Args = Mapping[str, Any]
Formula = Callable[[Args, Any], OpCost]


@dataclass(frozen=True, slots=True)
class FormulaEntry:
    """A registered formula and the op family it reports under."""

    op: str
    family: str
    formula: Formula
    values: tuple[str, ...] = ()  # arguments whose values (not just shapes) it reads
    # Who registered it when not pytest-modelprof ("register_formula", the hook's name), so a
    # formula that fails is reported as the user's to fix, not as our bug.
    origin: str | None = None


def prod(values: Any) -> int:
    return math.prod(int(v) for v in values)


def numel(t: TensorMeta | None) -> int:
    return 0 if t is None else t.numel


def _op_name(op: Any) -> str:
    """A packet (``aten.mm``), an overload (``aten.mm.default``) or a qualified name."""
    if isinstance(op, str):
        if "::" not in op:
            raise FormulaError(f"op names are qualified like 'aten::mm', got {op!r}")
        return op.split(".")[0]
    from pytest_modelprof._compat import qualified_op_name

    return qualified_op_name(op)


class CostRegistry:
    """Maps ops to formulas. Registering the same op twice is an error, never a silent override."""

    def __init__(self) -> None:
        self._entries: dict[str, FormulaEntry] = {}

    def register(
        self, *ops: Any, family: str, values: tuple[str, ...] = (), origin: str | None = None
    ) -> Callable[[Formula], Formula]:
        """Decorator: ``@registry.register(aten.mm, aten.bmm, family="matmul")``.

        ``values`` names tensor arguments whose values the formula reads (``offs``); the
        capture passes them in ``TensorMeta.data`` when the tensor has data.
        """
        if not ops:
            raise FormulaError("register() needs at least one op")

        def decorate(formula: Formula) -> Formula:
            for op in ops:
                self.add(op, formula, family=family, values=values, origin=origin)
            return formula

        return decorate

    def add(
        self,
        op: Any,
        formula: Formula,
        *,
        family: str,
        values: tuple[str, ...] = (),
        origin: str | None = None,
    ) -> None:
        name = _op_name(op)
        if name in self._entries:
            raise FormulaError(
                f"a cost formula for {name} is already registered "
                f"(family {self._entries[name].family!r}); remove one of the two"
            )
        self._entries[name] = FormulaEntry(name, family, formula, tuple(values), origin)

    def remove(self, op: Any) -> None:
        """Forget ``op``'s formula (a ``KeyError`` naming it when it has none)."""
        name = _op_name(op)
        if self._entries.pop(name, None) is None:
            raise FormulaError(f"no cost formula is registered for {name}")

    def lookup(self, op: Any) -> FormulaEntry | None:
        return self._entries.get(_op_name(op))

    def __contains__(self, op: Any) -> bool:
        return _op_name(op) in self._entries

    def __iter__(self) -> Iterator[FormulaEntry]:
        return iter(sorted(self._entries.values(), key=lambda e: e.op))

    def __len__(self) -> int:
        return len(self._entries)

    def families(self) -> dict[str, list[str]]:
        out: dict[str, list[str]] = {}
        for entry in self:
            out.setdefault(entry.family, []).append(entry.op)
        return out

    def copy(self) -> CostRegistry:
        new = CostRegistry()
        new._entries = dict(self._entries)
        return new
