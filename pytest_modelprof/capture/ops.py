"""Per-op facts for the capture: tensor records, schema-derived info, bytes and formula calls."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

import torch

from pytest_modelprof._compat import has_data, op_schema
from pytest_modelprof._tensors import flat_tensors
from pytest_modelprof.costs.registry import (
    ZERO,
    CostRegistry,
    FormulaEntry,
    OpCost,
    TensorMeta,
    zero_cost,
)
from pytest_modelprof.errors import FormulaError

__all__ = [
    "OpInfo",
    "tensor_meta",
    "schema_info",
    "read_bytes",
    "OpCall",
    "read_tensors",
    "price",
]

_DTYPES: dict[torch.dtype, tuple[str, int]] = {}  # dtype -> (name, itemsize); a cache
# (shape, dtype) -> its TensorMeta. A deep model repeats a handful of shapes thousands of
# times; sharing one immutable object each keeps the capture's heap (and the cyclic
# collector's passes over it) small. Cleared when it grows past _METAS_MAX entries.
_METAS: dict[tuple[Any, torch.dtype], TensorMeta] = {}
_METAS_MAX = 65536


def tensor_meta(t: torch.Tensor) -> TensorMeta:
    """Shape, dtype and item size of ``t`` (an interned, immutable record)."""
    dtype = t.dtype
    shape = tuple(t.shape)
    key = (shape, dtype)
    cache = True
    try:
        meta = _METAS.get(key)
    except TypeError:  # a symbolic size is not hashable: no interning
        cache = False
        meta = None
    if meta is not None:
        return meta
    known = _DTYPES.get(dtype)
    if known is None:
        known = _DTYPES[dtype] = (str(dtype).removeprefix("torch."), t.element_size())
    meta = TensorMeta(shape, known[0], known[1])
    if cache:
        if len(_METAS) >= _METAS_MAX:
            _METAS.clear()
        _METAS[key] = meta
    return meta


# Ops that look only at their tensor argument's shape, dtype and device: they read no data
# and do not depend on the op that produced it.
SHAPE_ONLY_OPS = frozenset(
    {
        "empty_like",
        "zeros_like",
        "ones_like",
        "full_like",
        "rand_like",
        "randn_like",
        "randint_like",
        "new_empty",
        "new_empty_strided",
        "new_zeros",
        "new_ones",
        "new_full",
    }
)


@dataclass(slots=True)
class OpInfo:
    """Per-overload facts derived once from the schema."""

    names: tuple[str, ...]
    entry: FormulaEntry | None
    # For each return: the argument it aliases (or None) and whether the op writes to it.
    aliases: tuple[tuple[str | None, bool], ...]
    is_view: bool
    # Tensor arguments whose data the op does not read: ``out=`` destinations (written, not
    # read) and the template of a ``*_like``/``new_*`` op.
    unread: frozenset[str]
    # Outputs from this index on are kernel-specific save statistics (batch norm), dropped
    # from traffic when nothing reads them; 0 means none.
    aux_from: int
    name: str  # the overload, e.g. "aten.mm.default"
    zero: bool  # the formula is the constant zero: no need to convert its arguments


def schema_info(func: Any, registry: CostRegistry) -> OpInfo:
    schema = op_schema(func)
    names = tuple(arg.name for arg in schema.arguments)
    sets: dict[str, str] = {}
    for arg in schema.arguments:
        info = arg.alias_info
        if info is not None:
            for s in info.before_set:
                sets[s] = arg.name
    aliases: list[tuple[str | None, bool]] = []
    for ret in schema.returns:
        info = ret.alias_info
        if info is None:
            aliases.append((None, False))
        else:
            target = next((sets[s] for s in info.before_set if s in sets), None)
            aliases.append((target, bool(info.is_write)))
    is_view = bool(aliases) and all(a is not None and not w for a, w in aliases)
    base = str(schema.name).partition("::")[2]
    unread = {arg.name for arg in schema.arguments if arg.is_out}
    if base.removesuffix("_") in SHAPE_ONLY_OPS and schema.arguments:
        unread.add(schema.arguments[0].name)
    # NB: batch norm's save_mean/save_invstd (and cuDNN's reserve space) have sizes that
    # differ between CPU, CUDA and meta kernels; only they are dropped when unread. Every other
    # secondary output (max's indices, max-pool indices) is written, read or not.
    aux_from = 1 if "batch_norm" in base and "backward" not in base else 0
    entry = registry.lookup(func)
    zero = entry is not None and entry.formula is zero_cost
    return OpInfo(
        names, entry, tuple(aliases), is_view, frozenset(unread), aux_from, str(func), zero
    )


def to_meta(value: Any, known: dict[int, TensorMeta]) -> Any:
    """Tensors (also inside lists/tuples) as TensorMeta; ``known`` holds the ones already made."""
    if isinstance(value, torch.Tensor):
        meta = known.get(id(value))
        return meta if meta is not None else tensor_meta(value)
    if isinstance(value, list):
        return [to_meta(v, known) for v in value]
    if isinstance(value, tuple):
        return tuple(to_meta(v, known) for v in value)
    return value


def read_bytes(t: torch.Tensor, meta: TensorMeta) -> int:
    # A broadcast (expanded) operand is read once from its storage, not once per element.
    if t.is_contiguous():
        return meta.nbytes
    try:
        return min(meta.nbytes, t.untyped_storage().nbytes())
    except (RuntimeError, NotImplementedError):  # storage-less tensor subclasses
        return meta.nbytes


def with_data(
    meta: Any, name: str, args: tuple[Any, ...], kwargs: dict[str, Any], names: tuple[str, ...]
) -> Any:
    """``meta`` with the tensor's values in ``data`` when it has them (real tensors)."""
    value = kwargs.get(name)
    if value is None and name in names and names.index(name) < len(args):
        value = args[names.index(name)]
    if not isinstance(value, torch.Tensor) or not isinstance(meta, TensorMeta):
        return meta
    if not has_data(value):
        return meta
    return dataclasses.replace(meta, data=tuple(value.reshape(-1).tolist()))


def formula_error(
    func: Any, entry: FormulaEntry, named: dict[str, Any], exc: Exception
) -> FormulaError:
    formula = entry.formula
    where = f"{getattr(formula, '__module__', '?')}.{getattr(formula, '__qualname__', formula)}"
    shapes = ", ".join(
        f"{k}={v.shape}" for k, v in named.items() if isinstance(v, TensorMeta)
    )
    failed = (
        f"the cost formula {where} for {func} failed with {type(exc).__name__}: {exc} "
        f"(arguments: {shapes or 'no tensors'})."
    )
    if entry.origin is not None:  # registered by the user: theirs to fix
        return FormulaError(
            f"{failed} It was registered with {entry.origin}, not by pytest-modelprof; fix it "
            "there: a formula gets the op's arguments by name (tensors as TensorMeta) and "
            "returns an OpCost."
        )
    return FormulaError(
        f"{failed} This is a bug in pytest-modelprof, not in "
        "your model or its inputs; please report it (with this message) at the project's "
        "issue tracker."
    )


class OpCall:
    """One op call as dispatched, with its arguments by schema name on demand."""

    __slots__ = ("func", "info", "args", "kwargs", "out", "_named")

    def __init__(
        self, func: Any, info: OpInfo, args: tuple[Any, ...], kwargs: dict[str, Any], out: Any
    ) -> None:
        self.func = func
        self.info = info
        self.args = args
        self.kwargs = kwargs
        self.out = out
        self._named: dict[str, Any] | None = None

    def argument(self, name: str) -> Any:
        """The tensor argument called ``name``, or None (it may be a list, or absent)."""
        if self._named is None:
            self._named = dict(zip(self.info.names, self.args, strict=False))
            self._named.update(self.kwargs)
        value = self._named.get(name)
        return value if isinstance(value, torch.Tensor) else None


def read_tensors(info: OpInfo, args: tuple[Any, ...], kwargs: dict[str, Any]) -> list[torch.Tensor]:
    """The op's tensor inputs, less the arguments its schema says it does not read."""
    tensors: list[torch.Tensor] = []
    if info.unread:
        named_args = dict(zip(info.names, args, strict=False))
        named_args.update(kwargs)
        flat_tensors([v for k, v in named_args.items() if k not in info.unread], tensors)
    else:
        flat_tensors(args, tensors)
        flat_tensors(list(kwargs.values()), tensors)
    return tensors


Side = tuple[list[torch.Tensor], tuple[Any, ...]]  # tensors and their metadata


def price(call: OpCall, inputs: Side, outputs: Side) -> tuple[OpCost, str | None]:
    """Cost and family of one call, from arguments by name (a formula's error is ours)."""
    info = call.info
    entry = info.entry
    if info.zero:
        return ZERO, entry.family if entry is not None else None
    if entry is None:
        return OpCost(0, 0), None
    known = {id(t): m for t, m in zip(*inputs, strict=True)}
    known.update((id(t), m) for t, m in zip(*outputs, strict=True))
    named = dict(zip(info.names, (to_meta(a, known) for a in call.args), strict=False))
    for k, v in call.kwargs.items():
        named[k] = to_meta(v, known)
    for k in entry.values:  # the few arguments whose values the formula reads
        named[k] = with_data(named.get(k), k, call.args, call.kwargs, info.names)
    out_m = to_meta(call.out, known)
    try:
        cost = entry.formula(named, out_m)
        if not isinstance(cost, OpCost):  # a formula of the user's returned an int
            raise TypeError(f"it returned {cost!r}, not an OpCost(flops, macs)")
    except Exception as exc:  # the formula's bug, not the model's nor its inputs'
        raise formula_error(call.func, entry, named, exc) from exc
    return cost, entry.family
