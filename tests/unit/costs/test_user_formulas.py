"""Cost formulas of the user's: ``register_formula`` (scripts, the CLI) and the session registry
the plugin builds with the ``pytest_modelprof_register_formulas`` hook."""

from __future__ import annotations

import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import torch
from torch import nn

from pytest_modelprof import OpCost, register_formula
from pytest_modelprof.cli import main
from pytest_modelprof.costs import default_registry
from pytest_modelprof.costs.registry import CostRegistry
from pytest_modelprof.costs.user import active_registry, session_registry, using_registry
from pytest_modelprof.errors import FormulaError
from pytest_modelprof.profile import profile_model


@torch.library.custom_op("modelprof_unit::triple", mutates_args=())
def triple(x: torch.Tensor) -> torch.Tensor:
    return x * 3


@triple.register_fake
def _(x: torch.Tensor) -> torch.Tensor:
    return torch.empty_like(x)


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(8, 16, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return triple(self.fc(x))  # type: ignore[no-any-return]


# fc on (2, 8): 2 * 2 * 8 * 16 = 512 FLOPs; triple: one multiply per element of (2, 16) = 32.
FC_FLOPS, TRIPLE_FLOPS = 512, 32


def triple_cost(args: Any, out: Any) -> OpCost:
    return OpCost(flops=args["x"].numel)


@pytest.fixture
def registered() -> Iterator[None]:
    """``triple`` priced in the process-wide registry for one test, then forgotten again."""
    register_formula("modelprof_unit::triple")(triple_cost)
    yield
    default_registry().remove("modelprof_unit::triple")


def test_without_a_formula_the_op_is_uncounted() -> None:
    p = profile_model(Net(), input_shape=(2, 8))
    assert p.total_flops == FC_FLOPS
    ((op, count),) = [(u.op, u.count) for u in p.uncounted_ops]
    assert op == "modelprof_unit.triple.default" and count == 1
    assert p.uncounted_ops[0].traffic == 2 * 2 * 16 * 4  # reads and writes a (2, 16) float32


def test_register_formula_counts_it_exactly(registered: None) -> None:
    p = profile_model(Net(), input_shape=(2, 8))
    assert p.total_flops == FC_FLOPS + TRIPLE_FLOPS and p.uncounted_ops == []
    assert {f.family for f in p.op_breakdown} >= {"custom"}
    # The same function registered again (a module imported twice) is no error; another is.
    register_formula("modelprof_unit::triple")(triple_cost)
    with pytest.raises(FormulaError, match="modelprof_unit::triple is already registered"):
        register_formula("modelprof_unit::triple")(lambda args, out: OpCost(0))


def test_the_cli_counts_an_op_its_model_module_registers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # What a user's model module does: price its op where it is defined.
    (tmp_path / "user_net.py").write_text(
        textwrap.dedent(f"""
        from pytest_modelprof import OpCost, register_formula
        from {__name__} import Net


        @register_formula("modelprof_unit::triple", family="pointwise")
        def triple_cost(args, out):
            return OpCost(flops=args["x"].numel)


        def make():
            return Net()
    """)
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        code = main(
            [
                "profile",
                "user_net:make",
                "--input-shape",
                "2,8",
                "--output",
                str(tmp_path / "p.json"),
            ]
        )
    finally:
        if "modelprof_unit::triple" in default_registry():
            default_registry().remove("modelprof_unit::triple")
    assert code == 0, capsys.readouterr().err
    text = (tmp_path / "p.json").read_text(encoding="utf-8")
    assert f'"total_flops": {FC_FLOPS + TRIPLE_FLOPS}' in text
    assert '"uncounted_ops": []' in text


def test_the_session_registry_is_a_copy_used_only_inside(tmp_path: Path) -> None:
    def hook(registry: CostRegistry) -> None:
        registry.register("modelprof_unit::triple", family="pointwise")(triple_cost)

    session = session_registry(hook)
    assert "modelprof_unit::triple" not in default_registry()  # the built-ins are untouched
    with using_registry(lambda: session):
        assert active_registry() is session
        p = profile_model(Net(), input_shape=(2, 8))
    assert p.total_flops == FC_FLOPS + TRIPLE_FLOPS
    assert active_registry() is default_registry()


def test_a_hook_that_registers_a_priced_op_again_names_the_hook() -> None:
    def hook(registry: CostRegistry) -> None:
        registry.register("aten::mm", family="matmul")(triple_cost)

    with pytest.raises(
        FormulaError, match="pytest_modelprof_register_formulas: .*aten::mm is already registered"
    ):
        session_registry(hook)


def test_a_broken_formula_of_the_users_is_reported_as_theirs() -> None:
    def hook(registry: CostRegistry) -> None:
        registry.register("modelprof_unit::triple", family="pointwise")(
            lambda args, out: args["x"].numel  # an int, not an OpCost
        )

    with using_registry(lambda: session_registry(hook)), pytest.raises(FormulaError) as info:
        profile_model(Net(), input_shape=(2, 8))
    message = str(info.value)
    assert "returned 32, not an OpCost" in message
    assert "registered with pytest_modelprof_register_formulas" in message
    assert "bug in pytest-modelprof" not in message


# -- the documentation's example is a working hook ---------------------------------------------


@torch.library.custom_op("mylib::attn", mutates_args=())
def attn(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    return torch.softmax(q @ k.transpose(-1, -2), dim=-1) @ v


@attn.register_fake
def _(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    return torch.empty_like(q)


class Attention(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return attn(x, x, x)  # type: ignore[no-any-return]


def test_the_readme_hook_prices_its_op() -> None:
    page = (Path(__file__).parents[3] / "docs" / "gate.md").read_text(encoding="utf-8")
    section = page.split("## Cost formulas for your ops")[1]
    code = section.split("```python\n")[1].split("```")[0]
    namespace: dict[str, Any] = {}
    exec(code, namespace)
    registry = session_registry(namespace["pytest_modelprof_register_formulas"])
    with using_registry(lambda: registry):
        p = profile_model(Attention(), input_shape=(1, 2, 8, 4))
    # QK^T and AV: 2 * (1 * 2 * 8 * 8 * 4) = 1024 MACs, 2048 FLOPs.
    assert (p.total_macs, p.total_flops) == (1024, 2048) and p.uncounted_ops == []
