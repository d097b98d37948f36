"""Universal checks that hold for the partition and graphs of any model."""

from __future__ import annotations

from pytest_modelprof.analysis.partition import PartitionReport, is_view_like, view_roots
from pytest_modelprof.capture.record import Capture
from pytest_modelprof.exports.graph import GraphExport
from pytest_modelprof.profile import Profiled


def check_partition(report: PartitionReport, made: Profiled) -> None:
    """DAG, one subgraph per op, conservation, consistent edges, sane bytes and stages."""
    profile, capture = made.profile, made.capture
    subgraphs = report.subgraphs
    assert [s.id for s in subgraphs] == list(range(len(subgraphs)))

    # Every op is in exactly one subgraph.
    owner: dict[int, int] = {}
    for s in subgraphs:
        assert s.ops, f"subgraph {s.id} is empty"
        for i in s.ops:
            assert i not in owner, f"op {i} is in subgraphs {owner[i]} and {s.id}"
            owner[i] = s.id
    assert sorted(owner) == list(range(len(capture.ops)))

    # The subgraph graph is a DAG numbered in topological order.
    for s in subgraphs:
        assert all(d < s.id for d in s.depends_on), f"subgraph {s.id}: {s.depends_on}"
        assert len(set(s.depends_on)) == len(s.depends_on)

    # Conservation: the subgraphs sum to the model's totals.
    assert sum(s.flops for s in subgraphs) == report.total_flops == profile.total_flops
    assert sum(s.macs for s in subgraphs) == profile.total_macs
    assert sum(s.params for s in subgraphs) == report.total_params
    assert report.total_params + report.unread_params == profile.total_params
    assert sum(s.unfused_bytes for s in subgraphs) == report.unfused_bytes == profile.total_traffic
    assert sum(s.memory for s in subgraphs) == report.fused_bytes

    # Fusion never adds traffic.
    for s in subgraphs:
        assert 0 <= s.memory <= s.unfused_bytes, s
    assert report.fused_arithmetic_intensity >= report.unfused_arithmetic_intensity

    # Edges are consistent: every dependency is witnessed by a dataflow edge, and every
    # dataflow edge between two subgraphs (through views, not through constants) is a dependency.
    ops = capture.ops
    root = view_roots(ops)
    witnessed: dict[int, set[int]] = {s.id: set() for s in subgraphs}
    for op in ops:
        if is_view_like(op) or op.family == "creation":
            continue
        for p in op.producers:
            r = root[p]
            if r < 0 or ops[r].family == "creation":
                continue
            a, b = owner[r], owner[op.index]
            if a != b:
                assert a in subgraphs[b].depends_on, f"edge {r}->{op.index} not a dependency"
                witnessed[b].add(a)
    for s in subgraphs:
        assert set(s.depends_on) == witnessed[s.id], f"subgraph {s.id}: unwitnessed dependency"

    # Views never form a subgraph of their own unless the model is nothing but views.
    if any(not is_view_like(op) for op in ops):
        for s in subgraphs:
            assert any(not is_view_like(ops[i]) for i in s.ops), f"subgraph {s.id} is views only"

    # Stages and the critical path agree with the dependencies.
    for s in subgraphs:
        expected = 1 + max((subgraphs[d].stage for d in s.depends_on), default=-1)
        assert s.stage == expected
    c = report.concurrency
    assert c.num_stages == max(s.stage for s in subgraphs) + 1
    assert sum(c.stage_sizes) == len(subgraphs)
    path = report.critical_path.nodes
    for a, b in zip(path, path[1:], strict=False):
        assert a in subgraphs[b].depends_on
    assert report.critical_path.flops == sum(subgraphs[i].flops for i in path)
    assert report.critical_path.flops <= report.total_flops


def check_graph(graph: GraphExport, capture: Capture, *, dag: bool) -> None:
    """Ids are positions, edges join existing nodes, stats match, no isolated nodes."""
    assert [n.id for n in graph.nodes] == list(range(len(graph.nodes)))
    assert graph.nodes[0].kind == "input" and graph.nodes[-1].kind == "output"
    pairs = [(e.source, e.target) for e in graph.edges]
    assert len(pairs) == len(set(pairs))
    for a, b in pairs:
        assert 0 <= a < len(graph.nodes) and 0 <= b < len(graph.nodes) and a != b
    assert graph.stats.nodes == len(graph.nodes) and graph.stats.edges == len(graph.edges)
    assert graph.stats.total_flops == sum(op.flops for op in capture.ops)
    # No dangling node: everything is fed by something and feeds something (or is the output).
    indeg = [0] * len(graph.nodes)
    outdeg = [0] * len(graph.nodes)
    for a, b in pairs:
        outdeg[a] += 1
        indeg[b] += 1
    for n in graph.nodes:
        # Only constants and ops on parameters alone (a position-bias lookup) may lack inputs.
        if n.kind != "input" and not (n.family == "creation" or n.param_names or n.params):
            assert indeg[n.id] > 0, f"{n.name} has no inputs"
        # NB: an in-place write through a view (Swin's ``mask[a:b] = v``) reaches its readers
        # through the base tensor, which the capture does not link back to the write.
        in_place = n.type.split(".")[1].endswith("_") if n.kind == "op" else False
        if n.kind != "output" and not in_place:
            assert outdeg[n.id] > 0, f"{n.name} feeds nothing"
    if dag:  # node order is execution order, so every edge must point forward
        for a, b in pairs:
            assert a < b, f"edge {a}->{b} points backward"
