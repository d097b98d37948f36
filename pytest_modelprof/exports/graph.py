"""The captured dataflow as a graph to read or draw: per module, or per op with every edge.

Two views of one capture, each written as JSON, text or Graphviz DOT:

* the **module graph** has one node per module scope that ran ops (the model's own scope is
  ``(model)``), plus ``input`` and ``output``. An edge joins two scopes when a tensor made by an
  op in one is read by an op in the other; edges inside a scope are not drawn. A module called
  several times (a shared ReLU) is one node, so this graph can have cycles.
* the **detail graph** has one node per op that is not a view, plus ``input`` and ``output``.
  Views are folded into the edges they carry (the edge says ``via``); every dataflow edge is
  kept, residual adds and tensor ops written in Python included, so this graph is a DAG.
  Zero-size outputs nobody reads (the scratch tensors batch norm allocates) are noise and are
  left out; the stats say how many.

Which ops read the model inputs comes from the capture's ``input_ops``; when the tracer did
not record them, an op is taken to read an input when it reads more tensors than its
producers and parameters account for (or reads a view of such a tensor).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from pytest_modelprof.analysis.partition import is_view_like, view_roots
from pytest_modelprof.capture.record import Capture, OpRecord
from pytest_modelprof.errors import SettingsError
from pytest_modelprof.schema import Frozen, dumps_deterministic
from pytest_modelprof.textfit import Column, cut_middle, layout_table
from pytest_modelprof.units import format_count

__all__ = [
    "export_graph",
]

GRAPH_SCHEMA_VERSION = 1
GraphFormat = Literal["json", "txt", "dot"]
INPUT = "input"
OUTPUT = "output"
ROOT = "(model)"


class GraphNode(Frozen):
    """A module scope or an op; ``input`` and ``output`` stand for the model's tensors."""

    id: int
    name: str
    kind: Literal["input", "output", "module", "op"]
    type: str  # module class, ATen op, or "input"/"output"
    module: str = ""  # dotted scope path; "" is the model itself
    family: str | None = None  # op family (op nodes)
    # The parameters of every module whose parameters this node's ops are the first to read:
    # a module's own, plus those of modules that never run (MultiheadAttention's out_proj).
    params: int = 0
    param_names: list[str] = []
    flops: int = 0
    ops: int = 0  # ATen ops behind the node (views included for module nodes)
    output_shape: list[int] | None = None
    # Measured forward time of the module per forward, children included (``--timed``).
    forward_ms: float | None = None


class GraphEdge(Frozen):
    """Data flowing from ``source`` to ``target``; ``tensors`` counts the op-level edges merged."""

    source: int
    target: int
    tensors: int = 1
    shape: list[int] | None = None  # of the first tensor, as the reader saw it
    via: str | None = None  # the view op the tensor last passed through (detail graph)


class GraphStats(Frozen):
    """Size and shape of the graph: roots, leaves, isolated nodes and degrees."""

    nodes: int
    edges: int
    sources: int  # nodes without incoming edges
    sinks: int  # nodes without outgoing edges
    isolated: int  # neither
    max_in_degree: int
    max_out_degree: int
    total_params: int
    total_flops: int
    dropped_ops: int = 0  # noise ops left out of the detail graph


class GraphExport(Frozen):
    """One graph document (``graph`` says which view)."""

    schema_version: int = GRAPH_SCHEMA_VERSION
    graph: Literal["module", "detail"]
    model: str
    nodes: list[GraphNode]
    edges: list[GraphEdge]
    stats: GraphStats


# -- building ------------------------------------------------------------------------------------

def _short(op: str) -> str:
    return op.removeprefix("aten.").removesuffix(".default")


def _reads_input(capture: Capture) -> list[bool]:
    """Whether each op reads a model input (directly or through a view).

    The capture's ``input_ops`` says so when the tracer records it. Otherwise: an op reads a
    model input when it reads more tensors than its producers and parameters account for.
    """
    ops = capture.ops
    if capture.input_ops:
        marked = set(capture.input_ops)
        return [op.index in marked for op in ops]
    flags: list[bool] = []
    for op in ops:
        direct = len(op.inputs) > len(op.params) + len(op.producers)
        via_view = any(is_view_like(ops[p]) and flags[p] for p in op.producers)
        flags.append(direct or via_view)
    return flags


def _is_noise(op: OpRecord, used: bool) -> bool:
    return not used and bool(op.outputs) and all(m.numel == 0 for m in op.outputs)


@dataclass(slots=True)
class _Edge:
    tensors: int
    shape: tuple[int, ...] | None
    via: str | None


class _Builder:
    """Collects edges, merging repeats between the same two nodes; no self-loops."""

    def __init__(self) -> None:
        self.edges: dict[tuple[int, int], _Edge] = {}

    def add(self, src: int, dst: int, shape: tuple[int, ...] | None, via: str | None) -> None:
        if src == dst:
            return
        entry = self.edges.get((src, dst))
        if entry is None:
            self.edges[(src, dst)] = _Edge(1, shape, via)
        else:
            entry.tensors += 1

    def build(self) -> list[GraphEdge]:
        return [
            GraphEdge(source=src, target=dst, tensors=e.tensors,
                      shape=list(e.shape) if e.shape is not None else None, via=e.via)
            for (src, dst), e in sorted(self.edges.items())
        ]


def _input_shape(op: OpRecord) -> tuple[int, ...] | None:
    """The shape shown on an edge from ``input``: the op's first input (the capture does not
    say which input slot held the model input)."""
    return op.inputs[0].shape if op.inputs else None


def _first_shape(op: OpRecord) -> tuple[int, ...] | None:
    return op.outputs[0].shape if op.outputs else None


def _params_read(ops: Sequence[OpRecord]) -> list[tuple[str, ...]]:
    """Parameters each op reads, counting those it reads through views (``t(weight)``)."""
    out: list[tuple[str, ...]] = []
    for op in ops:
        names = list(op.params)
        for p in op.producers:
            if is_view_like(ops[p]):
                names.extend(n for n in out[p] if n not in names)
        out.append(tuple(names))
    return out


def _credit_params(capture: Capture, reads: Sequence[tuple[str, ...]]) -> dict[int, int]:
    """Each module's own parameters go to the first non-view op that reads one of them."""
    credited: set[str] = set()
    out: dict[int, int] = {}
    for op, names in zip(capture.ops, reads, strict=True):
        if is_view_like(op):
            continue
        for name in names:
            module = name.rpartition(".")[0]
            if module not in credited:
                credited.add(module)
                out[op.index] = out.get(op.index, 0) + capture.module_params.get(module, 0)
    return out


def _stats(nodes: list[GraphNode], edges: list[GraphEdge], dropped: int) -> GraphStats:
    indeg = [0] * len(nodes)
    outdeg = [0] * len(nodes)
    for e in edges:
        outdeg[e.source] += 1
        indeg[e.target] += 1
    return GraphStats(
        nodes=len(nodes),
        edges=len(edges),
        sources=sum(1 for i in range(len(nodes)) if indeg[i] == 0),
        sinks=sum(1 for i in range(len(nodes)) if outdeg[i] == 0),
        isolated=sum(1 for i in range(len(nodes)) if indeg[i] == 0 and outdeg[i] == 0),
        max_in_degree=max(indeg, default=0),
        max_out_degree=max(outdeg, default=0),
        total_params=sum(n.params for n in nodes),
        total_flops=sum(n.flops for n in nodes),
        dropped_ops=dropped,
    )


def build_graph(capture: Capture, *, detail: bool, name: str = "model") -> GraphExport:
    """The module graph, or with ``detail=True`` the op graph, of ``capture``."""
    reads = _params_read(capture.ops)
    credit = _credit_params(capture, reads)
    nodes: list[GraphNode] = [GraphNode(id=0, name=INPUT, kind="input", type=INPUT)]
    node_of: dict[int, int] = {}  # op index -> node id
    dropped = 0
    if detail:
        dropped = _op_nodes(capture, reads, credit, nodes, node_of)
    else:
        _module_nodes(capture, credit, nodes, node_of)
    out_id = len(nodes)
    nodes.append(GraphNode(id=out_id, name=OUTPUT, kind="output", type=OUTPUT))
    edge_list = _edges(capture, node_of, out_id, detail=detail)
    return GraphExport(
        graph="detail" if detail else "module",
        model=name,
        nodes=nodes,
        edges=edge_list,
        stats=_stats(nodes, edge_list, dropped),
    )


def _used(capture: Capture) -> list[bool]:
    """Whether each op's output is read by another op or is a model output."""
    ops = capture.ops
    used = [False] * len(ops)
    for op in ops:
        for p in op.producers:
            used[p] = True
    for i in capture.output_ops:
        if 0 <= i < len(ops):
            used[i] = True
    return used


def _op_nodes(
    capture: Capture,
    reads: Sequence[tuple[str, ...]],
    credit: Mapping[int, int],
    nodes: list[GraphNode],
    node_of: dict[int, int],
) -> int:
    """One node per op that is not a view nor noise, appended; returns how many were noise."""
    used = _used(capture)
    dropped = 0
    for op in capture.ops:
        if is_view_like(op):
            continue
        if _is_noise(op, used[op.index]):
            dropped += 1
            continue
        node_of[op.index] = len(nodes)
        shape = _first_shape(op)
        nodes.append(GraphNode(
            id=len(nodes),
            name=f"{op.module or ROOT}/{_short(op.op)}",
            kind="op",
            type=op.op,
            module=op.module,
            family=op.family,
            params=credit.get(op.index, 0),
            param_names=list(reads[op.index]),
            flops=op.flops,
            ops=1,
            output_shape=list(shape) if shape is not None else None,
        ))
    return dropped


def _module_nodes(
    capture: Capture, credit: Mapping[int, int], nodes: list[GraphNode], node_of: dict[int, int]
) -> None:
    """One node per module scope that ran a non-view op, appended."""
    ops = capture.ops
    scope_node: dict[str, int] = {}
    flops: dict[str, int] = {}
    count: dict[str, int] = {}
    params: dict[str, int] = {}
    for op in ops:
        flops[op.module] = flops.get(op.module, 0) + op.flops
        count[op.module] = count.get(op.module, 0) + 1
        params[op.module] = params.get(op.module, 0) + credit.get(op.index, 0)
        if is_view_like(op) or op.module in scope_node:
            continue
        scope_node[op.module] = len(nodes)
        nodes.append(GraphNode(id=len(nodes), name=op.module or ROOT, kind="module",
                               type="?", module=op.module))
    for op in ops:
        if not is_view_like(op):
            node_of[op.index] = scope_node[op.module]
    # Fill in the per-scope facts now that every op is seen.
    for path, nid in scope_node.items():
        call = capture.modules.get(path)
        nodes[nid] = nodes[nid].model_copy(update={
            "type": capture.module_types.get(path, "?"),
            "params": params.get(path, 0),
            "flops": flops.get(path, 0),
            "ops": count.get(path, 0),
            "output_shape": list(call.output_shape) if call and call.output_shape else None,
        })


def _edges(
    capture: Capture, node_of: Mapping[int, int], out_id: int, *, detail: bool
) -> list[GraphEdge]:
    """Dataflow edges between the nodes, views folded into the edges that carry them."""
    ops = capture.ops
    root = view_roots(ops)
    from_input = _reads_input(capture)
    edges = _Builder()
    for op in ops:
        dst = node_of.get(op.index)
        if dst is None:
            continue
        fed_by_view = False
        for p in op.producers:
            producer = ops[p]
            via = _short(producer.op) if is_view_like(producer) and detail else None
            r = root[p]
            if r >= 0 and r in node_of:
                edges.add(node_of[r], dst, _first_shape(producer), via)
            elif is_view_like(producer) and from_input[p]:
                edges.add(0, dst, _first_shape(producer), via)
                fed_by_view = True
        if from_input[op.index] and not fed_by_view:
            edges.add(0, dst, _input_shape(op), None)
    _output_edges(capture, node_of, out_id, (root, from_input), edges)
    return edges.build()


def _output_edges(
    capture: Capture,
    node_of: Mapping[int, int],
    out_id: int,
    flow: tuple[Sequence[int], Sequence[bool]],
    edges: _Builder,
) -> None:
    """Edges into ``output`` from the nodes (or the input) behind each model output."""
    ops = capture.ops
    root, from_input = flow
    for i in capture.output_ops:
        if not 0 <= i < len(ops):
            continue
        r = root[i]
        if r >= 0 and r in node_of:
            edges.add(node_of[r], out_id, _first_shape(ops[i]), None)
        elif from_input[i]:
            edges.add(0, out_id, _first_shape(ops[i]), None)


def with_forward_times(graph: GraphExport, forward_ms: Mapping[str, float]) -> GraphExport:
    """``graph`` with ``forward_ms`` on each module node, from ``{module path: ms}``."""
    nodes = [
        n.model_copy(update={"forward_ms": forward_ms[n.module]})
        if n.kind == "module" and n.module in forward_ms else n
        for n in graph.nodes
    ]
    return graph.model_copy(update={"nodes": nodes})


def _timed(graph: GraphExport) -> bool:
    return any(n.forward_ms is not None for n in graph.nodes)


# -- writing -------------------------------------------------------------------------------------

def _shape(shape: list[int] | None) -> str:
    return "x".join(str(s) for s in shape) if shape is not None else "-"


def to_json(graph: GraphExport) -> str:
    """Deterministic JSON (sorted keys, indent 2, trailing newline)."""
    data = graph.model_dump(mode="json")
    if not _timed(graph):  # untimed exports keep the document they always had
        for node in data["nodes"]:
            del node["forward_ms"]
    return dumps_deterministic(data)


def to_text(graph: GraphExport, width: int = 100) -> str:
    """Node ids, names, params and FLOPs; every edge; then the stats, in ``width`` columns
    (names give way, cut in the middle)."""
    timed = _timed(graph)
    columns = [Column("id", ">"), Column("name"), Column("type"), Column("params", ">"),
               Column("flops", ">"), *([Column("forward_ms", ">")] if timed else []),
               Column("output")]
    rows = []
    for n in graph.nodes:
        ms = [f"{n.forward_ms:.4f}" if n.forward_ms is not None else "-"] if timed else []
        # Figures with units, as the rest of the text output prints them (the JSON keeps ints).
        rows.append([str(n.id), n.name, cut_middle(n.type, 24), format_count(n.params),
                     format_count(n.flops, "FLOPs"), *ms, _shape(n.output_shape)])
    lines = [f"# modelprof {graph.graph} graph of {graph.model}",
             f"# {graph.stats.nodes} nodes, {graph.stats.edges} edges", "", "[nodes]"]
    lines += layout_table(columns, rows, width, shrink=((1, 24), (2, 10), (1, 12))).lines
    lines += ["", "[edges]"]
    names = {n.id: n.name for n in graph.nodes}
    for e in graph.edges:
        extra = f"  x{e.tensors}" if e.tensors > 1 else ""
        via = f"  via {e.via}" if e.via else ""
        tail = f"  [{_shape(e.shape)}]{via}{extra}"
        room = max(8, (width - 18 - 4 - len(tail)) // 2)
        lines.append(f"{e.source:>6} -> {e.target:<6}  {cut_middle(names[e.source], room)} -> "
                     f"{cut_middle(names[e.target], room)}{tail}")
    s = graph.stats
    lines += [
        "", "[stats]",
        f"nodes           {s.nodes}",
        f"edges           {s.edges}",
        f"sources         {s.sources}",
        f"sinks           {s.sinks}",
        f"isolated        {s.isolated}",
        f"max in-degree   {s.max_in_degree}",
        f"max out-degree  {s.max_out_degree}",
        f"params          {s.total_params} ({format_count(s.total_params)})",
        f"flops           {s.total_flops} ({format_count(s.total_flops, 'FLOPs')})",
    ]
    root = next((n for n in graph.nodes if n.kind == "module" and n.module == ""), None)
    if root is not None and root.forward_ms is not None:
        lines.append(f"forward_ms      {root.forward_ms:.4f} (the model's own node, hooks "
                     "included)")
    if s.dropped_ops:
        lines.append(f"dropped ops     {s.dropped_ops} (zero-size outputs never read)")
    return "\n".join(lines) + "\n"


def _dot_string(text: str) -> str:
    """A DOT double-quoted string; ``\\n`` in ``text`` stays a label line break."""
    escaped = text.replace("\\", "\\\\").replace('"', '\\"')
    return '"' + escaped.replace("\n", "\\n") + '"'


def to_dot(graph: GraphExport) -> str:
    """Graphviz DOT: boxes for modules and ops, ellipses for input and output."""
    lines = [
        f"digraph {_dot_string(f'{graph.model} {graph.graph} graph')} {{",
        "  graph [rankdir=TB, fontname=\"Helvetica\"];",
        "  node [shape=box, style=rounded, fontname=\"Helvetica\", fontsize=10];",
        "  edge [fontname=\"Helvetica\", fontsize=8];",
    ]
    for n in graph.nodes:
        if n.kind in ("input", "output"):
            lines.append(f"  n{n.id} [label={_dot_string(n.name)}, shape=ellipse];")
            continue
        parts = [n.name, _short(n.type)]
        if n.params:
            parts.append(f"{format_count(n.params)} params")
        if n.flops:
            parts.append(format_count(n.flops, "FLOPs"))
        if n.forward_ms is not None:
            parts.append(f"{n.forward_ms:.3g} ms")
        lines.append(f"  n{n.id} [label={_dot_string(chr(10).join(parts))}];")
    for e in graph.edges:
        label = _shape(e.shape) + (f" ({e.via})" if e.via else "")
        if e.tensors > 1:
            label += f" x{e.tensors}"
        lines.append(f"  n{e.source} -> n{e.target} [label={_dot_string(label)}];")
    lines.append("}")
    return "\n".join(lines) + "\n"


def export_graph(capture: Capture, *, detail: bool, fmt: GraphFormat,
                 name: str = "model", forward_ms: Mapping[str, float] | None = None,
                 width: int = 100) -> str:
    """The module (or, with ``detail``, op) graph of ``capture`` as ``json``, ``txt`` (in
    ``width`` columns) or ``dot``.

    ``forward_ms`` (``{module path: ms}``) puts measured times on the module nodes.
    """
    graph = build_graph(capture, detail=detail, name=name)
    if forward_ms is not None:
        graph = with_forward_times(graph, forward_ms)
    if fmt == "json":
        return to_json(graph)
    if fmt == "txt":
        return to_text(graph, width)
    if fmt == "dot":
        return to_dot(graph)
    raise SettingsError(f"unknown graph format {fmt!r}; use json, txt or dot")
