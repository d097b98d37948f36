"""Cost formulas of your own: ``register_formula`` and the registry a pytest session uses.

A custom op (``torch.library.custom_op``) or an ATen op without a built-in formula is
recorded as uncounted. Two ways to price it, both with the formula signature of the built-in
ones (arguments by schema name, tensors as :class:`~pytest_modelprof.costs.TensorMeta`,
returning an :class:`~pytest_modelprof.costs.OpCost`):

* in ``conftest.py``, a ``pytest_modelprof_register_formulas(registry)`` hook: the plugin calls
  it once per session (and per xdist worker) on a copy of the built-in registry, before the
  first profile;
* anywhere else (a script, the module a ``modelprof`` command imports a model from),
  :func:`register_formula`, which adds to the process-wide registry every profile uses.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from pytest_modelprof.costs import default_registry
from pytest_modelprof.costs.registry import CostRegistry, Formula
from pytest_modelprof.errors import FormulaError

__all__ = [
    "REGISTER_HINT",
    "register_formula",
    "active_registry",
    "using_registry",
    "session_registry",
]

HOOK = "pytest_modelprof_register_formulas"

#: What a message about uncounted ops suggests: the two ways to give an op a formula.
REGISTER_HINT = (
    "register a cost formula with a pytest_modelprof_register_formulas(registry) hook in "
    "conftest.py, or with pytest_modelprof.register_formula"
)

# How to get the registry of the pytest session running now (set around each gated test by the
# plugin); None outside a session: profiles use the process-wide registry. A callable, so a
# gated test that never profiles (a fake engine, a cached profile) never builds it (torch).
_SESSION: ContextVar[Callable[[], CostRegistry] | None] = ContextVar(
    "modelprof_registry", default=None
)


def register_formula(
    *ops: Any, family: str = "custom", values: tuple[str, ...] = ()
) -> Callable[[Formula], Formula]:
    """Decorator: price ``ops`` (``"mylib::attn"``, ``torch.ops.mylib.attn``) in every profile.

    >>> @register_formula("mylib::attn", family="attention")
    ... def attn(args, out):
    ...     return OpCost(flops=4 * args["q"].numel, macs=2 * args["q"].numel)

    An op that already has a formula raises, unless it is the same function registered again
    (a module imported twice).
    """
    registry = default_registry()

    def decorate(formula: Formula) -> Formula:
        for op in ops:
            entry = registry.lookup(op)
            if entry is not None and _same_function(entry.formula, formula):
                registry.remove(op)
        return registry.register(*ops, family=family, values=values, origin="register_formula")(
            formula
        )

    return decorate


def _same_function(a: Formula, b: Formula) -> bool:
    def where(f: Formula) -> tuple[str, str]:
        return getattr(f, "__module__", ""), getattr(f, "__qualname__", repr(f))

    return a is b or where(a) == where(b)


def active_registry() -> CostRegistry:
    """The registry a profile uses: the pytest session's, else the process-wide one."""
    session = _SESSION.get()
    return session() if session is not None else default_registry()


@contextmanager
def using_registry(registry: Callable[[], CostRegistry]) -> Iterator[None]:
    """Profiles inside use the registry ``registry()`` returns, built on first use (the plugin
    wraps each gated test in it)."""
    token = _SESSION.set(registry)
    try:
        yield
    finally:
        _SESSION.reset(token)


def session_registry(register: Callable[[CostRegistry], object]) -> CostRegistry:
    """A copy of the process-wide registry with what ``register`` (the hook) adds to it."""
    builtin = default_registry()
    registry = builtin.copy()
    try:
        register(registry)
    except (FormulaError, ValueError, KeyError) as exc:  # a duplicate op, an unqualified name
        raise FormulaError(f"{HOOK}: {exc}") from None
    for entry in list(registry):
        if builtin.lookup(entry.op) is not entry:  # the hook's: marked as the user's
            registry.remove(entry.op)
            registry.add(
                entry.op, entry.formula, family=entry.family, values=entry.values, origin=HOOK
            )
    return registry
