"""Per-module forward times on real tensors: structure and invariants, never speed.

The clock is real, so no test asserts how long anything took; they assert which modules are
reported, under which paths, how often they ran, and relations that hold for any timings
(a module's own time fits inside its total; the self times add up to the model's forward).
"""

from __future__ import annotations

import json
from typing import Any

import pytest
import torch
import torchvision
from torch import nn

from pytest_modelprof.exports.graph import (
    build_graph,
    export_graph,
    to_dot,
    with_forward_times,
)
from pytest_modelprof.profile import profile_with_capture
from pytest_modelprof.runtime.module_timing import (
    ROOT_LABEL,
    ModuleTimings,
    format_module_times,
    time_modules,
)


@pytest.fixture(scope="module")
def resnet18_times() -> tuple[nn.Module, ModuleTimings]:
    torch.manual_seed(0)
    model = torchvision.models.resnet18(weights=None)
    x = torch.randn(1, 3, 32, 32)
    return model, time_modules(model, x, rounds=3, warmup=1, threads=1)


def test_every_module_of_resnet18_is_timed_under_its_path(
    resnet18_times: tuple[nn.Module, ModuleTimings],
) -> None:
    model, times = resnet18_times
    assert [m.path for m in times.modules][0] == ""  # the model itself comes first
    assert {m.path for m in times.modules} == {name for name, _ in model.named_modules()}
    by_path = times.by_path()
    assert by_path[""].type == "ResNet"
    assert by_path["layer1.0.conv1"].type == "Conv2d"
    assert (times.rounds, times.warmup, times.timer, times.device) == (3, 1, "perf_counter",
                                                                        "cpu")


def test_call_counts_per_forward(resnet18_times: tuple[nn.Module, ModuleTimings]) -> None:
    _, times = resnet18_times
    by_path = times.by_path()
    # BasicBlock.forward calls its one ReLU twice (after bn1 and after the residual add).
    assert by_path["layer1.0.relu"].calls == 2
    assert by_path["layer1.0.conv1"].calls == 1
    assert by_path[""].calls == 1


def test_time_invariants(resnet18_times: tuple[nn.Module, ModuleTimings]) -> None:
    _, times = resnet18_times
    by_path = times.by_path()
    for m in times.modules:
        assert 0.0 <= m.self_ms <= m.forward_ms + 1e-9
        assert 0.0 <= m.min_ms <= m.forward_ms + 1e-9
    # A child's calls run inside its parent's, on the same clock.
    assert by_path["layer1"].forward_ms >= by_path["layer1.0"].forward_ms
    assert by_path["layer1.0"].forward_ms >= by_path["layer1.0.conv1"].forward_ms
    assert by_path[""].forward_ms >= by_path["layer4"].forward_ms
    # Self times partition the forward: each instant belongs to exactly one innermost module.
    assert sum(m.self_ms for m in times.modules) == pytest.approx(times.forward_ms, rel=1e-9)
    # A container that only calls its children keeps little for itself.
    assert by_path["layer1"].self_ms < by_path["layer1"].forward_ms


def test_paths_match_the_module_graph_nodes(
    resnet18_times: tuple[nn.Module, ModuleTimings],
) -> None:
    model, times = resnet18_times
    capture = profile_with_capture(model, input_shape=(1, 3, 32, 32)).capture
    graph = build_graph(capture, detail=False)
    module_nodes = [n.module for n in graph.nodes if n.kind == "module"]
    assert module_nodes
    assert set(module_nodes) <= set(times.by_path())


class _Block(nn.Module):
    def __init__(self, act: nn.Module) -> None:
        super().__init__()
        self.lin = nn.Linear(8, 8)
        self.act = act

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out: torch.Tensor = self.act(self.lin(x))
        return out


class _SharedAct(nn.Module):
    """One SiLU object registered under two blocks, as ultralytics does."""

    def __init__(self) -> None:
        super().__init__()
        act = nn.SiLU()
        self.b1 = _Block(act)
        self.b2 = _Block(act)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out: torch.Tensor = self.b2(self.b1(x))
        return out


def test_a_shared_module_is_billed_to_the_path_under_its_caller() -> None:
    model = _SharedAct()
    times = time_modules(model, torch.randn(2, 8), rounds=2, warmup=0)
    by_path = times.by_path()
    assert by_path["b1.act"].calls == 1
    assert by_path["b2.act"].calls == 1
    capture = profile_with_capture(model, input_shape=(2, 8)).capture
    assert {"b1.act", "b2.act"} <= set(capture.modules)


def test_model_is_left_as_it_was() -> None:
    model = nn.Sequential(nn.Linear(4, 4), nn.Dropout(0.5), nn.ReLU()).train()
    before = {k: v.clone() for k, v in model.state_dict().items()}
    x = torch.randn(3, 4)
    rng = torch.get_rng_state()
    time_modules(model, x, rounds=2, warmup=1)
    assert all(m.training for m in model.modules())
    assert all(not m._forward_hooks and not m._forward_pre_hooks for m in model.modules())
    assert all(torch.equal(v, before[k]) for k, v in model.state_dict().items())
    assert torch.equal(torch.get_rng_state(), rng)


class _Boom(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        raise RuntimeError("boom")


def test_a_failing_forward_propagates_and_removes_the_hooks() -> None:
    model = _Boom()
    with pytest.raises(RuntimeError, match="boom"):
        time_modules(model, torch.randn(1, 4), rounds=1, warmup=0)
    assert all(not m._forward_hooks and not m._forward_pre_hooks for m in model.modules())


def test_keyword_inputs_and_progress() -> None:
    class Kw(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.emb = nn.Embedding(10, 4)

        def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
            out: torch.Tensor = self.emb(input_ids)
            return out

    seen: list[tuple[int, int]] = []
    times = time_modules(Kw(), {"input_ids": torch.tensor([[1, 2, 3]])}, rounds=2, warmup=1,
                         progress=lambda done, total: seen.append((done, total)))
    assert seen == [(1, 3), (2, 3), (3, 3)]
    assert set(times.by_path()) == {"", "emb"}


@pytest.mark.parametrize(("kwargs", "match"), [
    ({"rounds": 0}, "rounds must be >= 1"),
    ({"warmup": -1}, "warmup must be >= 0"),
])
def test_bad_arguments_name_the_culprit(kwargs: dict[str, Any], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        time_modules(nn.Linear(2, 2), torch.randn(1, 2), **kwargs)


def test_a_meta_model_is_refused_with_a_hint() -> None:
    with torch.device("meta"):
        model = nn.Linear(2, 2)
    with pytest.raises(ValueError, match="meta device"):
        time_modules(model, torch.randn(1, 2, device="meta"))


def test_slowest_and_the_table(resnet18_times: tuple[nn.Module, ModuleTimings]) -> None:
    _, times = resnet18_times
    top = times.slowest(5)
    assert len(top) == 5
    assert [m.self_ms for m in top] == sorted((m.self_ms for m in top), reverse=True)
    assert times.slowest(1, by="forward_ms")[0].path == ""  # the whole model contains all
    text = format_module_times(times, top=len(times.modules))
    assert ROOT_LABEL in text
    assert "layer1.0.conv1" in text
    assert len(text.splitlines()) == len(times.modules) + 1


def test_a_timed_module_graph_carries_forward_ms_on_every_module_node(
    resnet18_times: tuple[nn.Module, ModuleTimings],
) -> None:
    model, times = resnet18_times
    capture = profile_with_capture(model, input_shape=(1, 3, 32, 32)).capture
    untimed = json.loads(export_graph(capture, detail=False, fmt="json"))
    assert all("forward_ms" not in n for n in untimed["nodes"])  # the old document, unchanged
    forward_ms = times.forward_ms_by_path()
    data = json.loads(export_graph(capture, detail=False, fmt="json", forward_ms=forward_ms))
    modules = [n for n in data["nodes"] if n["kind"] == "module"]
    # JSON rounds floats to 6 decimals
    assert modules and all(n["forward_ms"] == pytest.approx(forward_ms[n["module"]], abs=1e-6)
                           for n in modules)
    assert all(n["forward_ms"] is None for n in data["nodes"] if n["kind"] != "module")
    text = export_graph(capture, detail=False, fmt="txt", forward_ms=forward_ms)
    assert "forward_ms" in text.splitlines()[4]  # the column header of [nodes]
    graph = with_forward_times(build_graph(capture, detail=False), forward_ms)
    dot = to_dot(graph)
    conv1 = next(n for n in graph.nodes if n.module == "conv1")
    assert conv1.forward_ms is not None
    assert f"{conv1.forward_ms:.3g} ms" in dot
