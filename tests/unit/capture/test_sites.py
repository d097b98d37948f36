"""Call sites: the line of model code that called each forward op (capture/sites.py)."""

from __future__ import annotations

import inspect

import torch
from torch import nn

from pytest_modelprof import profile_model


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(4, 4)
        self.act = nn.Sequential(nn.ReLU())

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.fc(x)  # fc
        y = self.act(y)  # act
        return torch.tanh(y).view(-1)  # tanh


def _line(marker: str) -> str:
    lines, start = inspect.getsourcelines(Net.forward)
    return f"test_sites.py:{start + next(i for i, t in enumerate(lines) if f'# {marker}' in t)}"


def _sites(profile: object) -> dict[tuple[str, str], list[str]]:
    return {(r.module, r.op): [s.rpartition("/")[2] for s in r.sites] for r in profile.op_calls}  # type: ignore[attr-defined]


def test_each_forward_op_names_the_model_line_that_called_it() -> None:
    p = profile_model(Net(), input_shape=(2, 4), mode="meta", include_backward=True)
    sites = _sites(p)
    # An op inside a torch module is named by the line of model code that called the module.
    assert sites[("fc", "aten.addmm.default")] == [_line("fc")]
    assert sites[("act.0", "aten.relu.default")] == [_line("act")]
    assert sites[("(model)", "aten.tanh.default")] == [_line("tanh")]
    # Views are left out (they move nothing); backward ops have no line of model code.
    assert not any(op.startswith("aten.view") for _, op in sites)
    backward = [where for (module, _), where in sites.items() if module == "(backward)"]
    assert backward and all(where == [] for where in backward)


def test_a_model_made_of_torch_modules_only_names_no_line() -> None:
    # No forward of the user's runs: the caller of the model is our capture, not model code.
    p = profile_model(nn.Sequential(nn.Linear(4, 4), nn.ReLU()), input_shape=(2, 4), mode="meta")
    assert p.op_calls and all(r.sites == [] for r in p.op_calls)
    calls = {(r.module, r.op): r.count for r in p.op_calls}
    assert calls[("1", "aten.relu.default")] == 1


def _helper(x: torch.Tensor) -> torch.Tensor:
    return torch.relu(x)  # helper


class Paths(nn.Module):
    """One op reached at three depths: directly, through torch's functional, through a helper."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = torch.relu(x)  # direct
        x = nn.functional.relu(x)  # functional
        return _helper(x)


def test_one_op_reached_at_several_depths_names_each_line() -> None:
    p = profile_model(Paths(), input_shape=(2, 4), mode="meta")
    (relu,) = [r for r in p.op_calls if r.op == "aten.relu.default"]
    lines, start = inspect.getsourcelines(Paths.forward)
    direct, functional = (
        f"test_sites.py:{start + next(i for i, t in enumerate(lines) if f'# {m}' in t)}"
        for m in ("direct", "functional")
    )
    helper = f"test_sites.py:{inspect.getsourcelines(_helper)[1] + 1}"
    assert relu.count == 3
    assert [s.rpartition("/")[2] for s in relu.sites] == [direct, functional, helper]
