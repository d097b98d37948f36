"""Module and op graph exports: contents, the three formats, and Graphviz rendering."""

from __future__ import annotations

import json
import shutil
import subprocess

import pytest
import torch
from partition_checks import check_graph
from torch import nn

from pytest_modelprof.capture.record import Capture
from pytest_modelprof.exports.graph import (
    GraphExport,
    build_graph,
    export_graph,
    to_dot,
)
from pytest_modelprof.profile import profile_with_capture
from pytest_modelprof.units import format_count


class Residual(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(4, 4, 3, padding=1)
        self.act = nn.ReLU()
        self.head = nn.Linear(4 * 8 * 8, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.act(self.conv(x)) + x  # the add runs in the model's own scope
        out: torch.Tensor = self.head(y.flatten(1))
        return out


@pytest.fixture(scope="module")
def capture() -> Capture:
    return profile_with_capture(Residual(), input_shape=(1, 4, 8, 8)).capture


def edges_by_name(graph: GraphExport) -> set[tuple[str, str]]:
    names = {n.id: n.name for n in graph.nodes}
    return {(names[e.source], names[e.target]) for e in graph.edges}


def test_module_graph(capture: Capture) -> None:
    graph = build_graph(capture, detail=False, name="residual")
    check_graph(graph, capture, dag=True)
    assert [n.name for n in graph.nodes] == ["input", "conv", "act", "(model)", "head", "output"]
    # The residual edge from the input into the model's own scope is there.
    assert edges_by_name(graph) == {
        ("input", "conv"), ("conv", "act"), ("act", "(model)"), ("input", "(model)"),
        ("(model)", "head"), ("head", "output"),
    }
    conv = graph.nodes[1]
    assert (conv.type, conv.params) == ("Conv2d", 4 * 4 * 9 + 4)
    assert graph.stats.total_params == 148 + 256 * 10 + 10


def test_detail_graph_folds_views_into_edges(capture: Capture) -> None:
    graph = build_graph(capture, detail=True, name="residual")
    check_graph(graph, capture, dag=True)
    ops = [n.type for n in graph.nodes if n.kind == "op"]
    assert ops == ["aten.convolution.default", "aten.relu.default", "aten.add.Tensor",
                   "aten.addmm.default"]
    flatten = next(e for e in graph.edges if graph.nodes[e.target].type == "aten.addmm.default")
    assert (flatten.via, flatten.shape) == ("view", [1, 256])
    # addmm reads the weight through t(): the Linear's parameters are credited to it.
    addmm = graph.nodes[4]
    assert set(addmm.param_names) == {"head.bias", "head.weight"}
    assert addmm.params == 2570
    assert graph.stats.total_params == 148 + 2570


def test_json_is_deterministic_and_round_trips(capture: Capture) -> None:
    text = export_graph(capture, detail=True, fmt="json", name="residual")
    assert text == export_graph(capture, detail=True, fmt="json", name="residual")
    assert text.endswith("}\n")
    data = json.loads(text)
    assert data["graph"] == "detail" and data["schema_version"] == 1
    assert GraphExport.model_validate(data) == build_graph(capture, detail=True, name="residual")


def test_text_lists_nodes_edges_and_stats(capture: Capture) -> None:
    text = export_graph(capture, detail=False, fmt="txt", name="residual")
    assert text.startswith("# modelprof module graph of residual\n# 6 nodes, 6 edges\n")
    for section in ("[nodes]", "[edges]", "[stats]"):
        assert section in text
    assert "     0 -> 1       input -> conv  [1x4x8x8]" in text
    assert "params          2718 (2.72 K)" in text


def test_unknown_format(capture: Capture) -> None:
    with pytest.raises(ValueError, match="use json, txt or dot"):
        export_graph(capture, detail=False, fmt="svg", name="x")  # type: ignore[arg-type]


class Quoted(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.blocks = nn.ModuleDict({'say "hi"\\': nn.ReLU()})

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out: torch.Tensor = self.blocks['say "hi"\\'](x)
        return out


def test_dot_escapes_names() -> None:
    capture = profile_with_capture(Quoted(), input_shape=(2, 3), name='odd "name"').capture
    dot = export_graph(capture, detail=False, fmt="dot", name='odd "name"')
    assert dot.startswith('digraph "odd \\"name\\" module graph" {\n')
    assert 'label="blocks.say \\"hi\\"\\\\\\nReLU' in dot


@pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz `dot` is not installed")
@pytest.mark.parametrize("detail", [False, True])
def test_dot_renders_with_graphviz(capture: Capture, detail: bool) -> None:
    for dot in (export_graph(capture, detail=detail, fmt="dot", name="residual"),
                to_dot(build_graph(capture, detail=detail, name='odd "name" \\ {x}'))):
        result = subprocess.run(["dot", "-Tsvg"], input=dot, capture_output=True, text=True,
                                check=False, timeout=60)
        assert result.returncode == 0, result.stderr
        assert "<svg" in result.stdout


def test_text_nodes_carry_units(capture: Capture) -> None:
    # Seen before: the [nodes] table printed raw integers (4816896) under params and flops.
    text = export_graph(capture, detail=False, fmt="txt", name="residual")
    nodes = text.split("[nodes]\n")[1].split("\n\n")[0].splitlines()
    conv = next(line for line in nodes if " conv " in line)
    graph = build_graph(capture, detail=False, name="residual")
    node = next(n for n in graph.nodes if n.name == "conv")
    assert node.flops >= 1000 and node.params >= 100  # figures worth a unit
    assert str(node.flops) not in conv and format_count(node.flops, "FLOPs") in conv
    assert format_count(node.params) in conv
    assert all(len(line) <= 100 for line in text.splitlines())
