"""The formula registry: every formula reads only arguments its ops have; no entry is shadowed."""

from __future__ import annotations

import ast
import inspect
import textwrap
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import torch
import torchvision  # noqa: F401  (registers the torchvision:: ops the registry prices)
from torch import nn

from pytest_modelprof import _compat
from pytest_modelprof.costs import default_registry, movement, pointwise
from pytest_modelprof.costs.registry import CostRegistry, OpCost
from pytest_modelprof.errors import FormulaError, ModelInputError
from pytest_modelprof.profile import profile_model

# -- which argument names a formula reads (static, following helpers that receive the args) ------

def _reads(func: Callable[..., Any], param_index: int = 0, depth: int = 0) -> set[str]:
    """Names read with ``a[...]``, ``a.get(...)`` or probed with ``"x" in a``."""
    source = textwrap.dedent(inspect.getsource(func))
    tree = ast.parse(source)
    fn = next(n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.Lambda)))
    params = [p.arg for p in fn.args.args]
    if param_index >= len(params):
        return set()
    name = params[param_index]
    scope: dict[str, Any] = dict(func.__globals__)
    closure = inspect.getclosurevars(func)
    scope.update(closure.nonlocals)
    read: set[str] = set()

    def is_args(node: ast.AST) -> bool:
        return isinstance(node, ast.Name) and node.id == name

    for node in ast.walk(fn):
        if isinstance(node, ast.Subscript) and is_args(node.value):
            key = node.slice
            if isinstance(key, ast.Constant) and isinstance(key.value, str):
                read.add(key.value)
        elif isinstance(node, ast.Call):
            f = node.func
            if isinstance(f, ast.Attribute) and is_args(f.value) and f.attr == "get":
                key = node.args[0]
                if isinstance(key, ast.Constant) and isinstance(key.value, str):
                    read.add(key.value)
            for k, arg in enumerate(node.args):  # a helper handed the arguments: follow it
                if is_args(arg) and isinstance(f, ast.Name) and callable(scope.get(f.id)):
                    assert depth < 5
                    read |= _reads(scope[f.id], k, depth + 1)
        elif isinstance(node, ast.Compare) and any(isinstance(o, ast.In) for o in node.ops):
            if is_args(node.comparators[0]) and isinstance(node.left, ast.Constant):
                read.add(str(node.left.value))
    return read


def _registered_ops() -> Iterator[tuple[str, Any, set[str]]]:
    for entry in default_registry():
        ns, _, op_name = entry.op.partition("::")
        packet = getattr(getattr(torch.ops, ns), op_name)
        names: set[str] = set()
        for overload in _compat.op_overloads(packet):
            names.update(a.name for a in _compat.op_schema(overload).arguments)
        yield entry.op, entry.formula, names


def test_every_formula_reads_only_arguments_its_op_has() -> None:
    # A formula reading a name its op lacks raises KeyError (cudnn_grid_sampler read
    # `interpolation_mode`) or silently takes a default (`a.get(...)`): both are engine bugs.
    bad: list[str] = []
    checked = 0
    for op, formula, names in _registered_ops():
        missing = sorted(_reads(formula) - names)
        if missing:
            bad.append(f"{op}: {formula.__qualname__} reads {missing}")
        checked += 1
    assert bad == []
    assert checked == len(default_registry())


def test_the_schema_check_sees_a_wrong_argument_name() -> None:
    # The checker itself: a formula reading a name the op does not have is reported.
    def wrong(a: Any, out: Any) -> OpCost:
        return OpCost(int(a["interpolation_mode"]))

    def right(a: Any, out: Any) -> OpCost:
        return OpCost(int(a.get("align_corners", 0)) + a["input"].numel)

    def helper(x: Any, args: Any) -> int:
        return int("mode" in args) + int(args.get("padding_mode", 0))

    def via_helper(a: Any, out: Any) -> OpCost:
        return OpCost(helper(1, a))

    assert _reads(wrong) == {"interpolation_mode"}
    assert _reads(right) == {"align_corners", "input"}
    assert _reads(via_helper) == {"mode", "padding_mode"}


# -- a formula that raises is the engine's bug, not the user's input ---------------------------

class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(4, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.fc(x))


def _broken_relu(a: Any, out: Any) -> OpCost:
    return OpCost(a["no_such_argument"])


@pytest.mark.parametrize("mode", ["meta", "fake", "real"])
def test_a_formula_error_is_reported_as_an_engine_bug(mode: str) -> None:
    reg = CostRegistry()
    reg.add("aten::relu", _broken_relu, family="activation")
    with pytest.raises(FormulaError) as info:
        profile_model(Net(), input_shape=(2, 4), mode=mode, registry=reg)  # type: ignore[arg-type]
    text = str(info.value)
    assert "aten.relu.default" in text
    assert "_broken_relu" in text  # the formula, so a maintainer finds it
    assert "KeyError" in text and "no_such_argument" in text
    assert "bug in pytest-modelprof" in text and "report" in text
    assert "rejected input" not in text and "input_shape" not in text
    assert not isinstance(info.value, ModelInputError)


def test_cudnn_grid_sampler_formula_prices_bilinear_sampling() -> None:
    # The CUDA kernel aten.cudnn_grid_sampler(self, grid) is always bilinear, align_corners=True:
    # 7 FLOPs per output (4 multiplies + 3 adds). Output 1x3x5x5 = 75 elements -> 525.
    entry = default_registry().lookup(torch.ops.aten.cudnn_grid_sampler.default)
    assert entry is not None
    from pytest_modelprof.costs.registry import TensorMeta

    x = TensorMeta((1, 3, 8, 8), "float32", 4)
    grid = TensorMeta((1, 5, 5, 2), "float32", 4)
    out = TensorMeta((1, 3, 5, 5), "float32", 4)
    assert entry.formula({"self": x, "grid": grid}, out) == OpCost(525)


# -- no table entry shadows another --------------------------------------------------------------

def test_a_shadowed_table_entry_is_an_error_when_the_registry_is_built() -> None:
    # Registering relu before the pointwise tables used to be skipped silently (the table's
    # entry lost); now the second registration of the same op raises and names it.
    reg = CostRegistry()
    reg.add("aten::relu", _broken_relu, family="mine")
    with pytest.raises(FormulaError, match=r"aten::relu is already registered"):
        pointwise.register(reg)
    reg = CostRegistry()
    reg.add("aten::fill_", _broken_relu, family="mine")
    with pytest.raises(FormulaError, match=r"aten::fill_ is already registered"):
        movement.register(reg)


def test_the_default_tables_hold_each_op_once() -> None:
    # Within one table, a name listed twice (or a name and its own in-place twin) is an error.
    seen: dict[str, str] = {}
    clashes: list[str] = []
    tables: dict[str, Any] = {
        "VIEW_OPS": movement.VIEW_OPS,
        "COPY_OPS": movement.COPY_OPS,
        "CREATION_OPS": movement.CREATION_OPS,
        "ACTIVATION_FLOPS": pointwise.ACTIVATION_FLOPS,
        "ARITHMETIC_FLOPS": pointwise.ARITHMETIC_FLOPS,
        "BACKWARD_FLOPS": pointwise.BACKWARD_FLOPS,
    }
    for table, names in tables.items():
        for n in names:
            key = n.removesuffix("_")
            if key in seen:
                clashes.append(f"{n} in {table} and {seen[key]}")
            seen[key] = table
    assert clashes == []
    # The registry is built from them without a single clash (it raises on one).
    assert len(default_registry()) == len({e.op for e in default_registry()})
