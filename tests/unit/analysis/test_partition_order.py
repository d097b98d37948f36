"""The partitioner's cycle check: pruned by a topological order, yet the same answer."""

from __future__ import annotations

import pytest
import torch
import torchvision
from torch import nn

from pytest_modelprof.analysis import grouping
from pytest_modelprof.analysis import partition as part
from pytest_modelprof.analysis import subgraph_order as order
from pytest_modelprof.capture.record import Capture
from pytest_modelprof.profile import profile_with_capture
from pytest_modelprof.zoo import LlamaConfig, LlamaDecoder


def _naive_depends_on(groups: list[order.Group], start: int, target: int) -> bool:
    # The reference: search everything `start` depends on (quadratic in depth overall).
    seen, stack = {start}, [start]
    while stack:
        for d in groups[stack.pop()].deps:
            if d == target:
                return True
            if d not in seen:
                seen.add(d)
                stack.append(d)
    return False


def _capture(name: str) -> Capture:
    model: nn.Module
    if name == "llama":
        cfg = LlamaConfig(vocab=64, dim=32, layers=6, heads=4, kv_heads=2, ffn=64, max_seq=8)
        with torch.device("meta"):
            model = LlamaDecoder(cfg)
        return profile_with_capture(
            model, inputs=(torch.zeros(1, 8, dtype=torch.long, device="meta"),)
        ).capture
    kwargs = {"init_weights": False} if name in ("googlenet", "inception_v3") else {}
    with torch.device("meta"):
        model = torchvision.models.get_model(name, **kwargs)
    size = 75 if name == "inception_v3" else 64
    return profile_with_capture(model, input_shape=(1, 3, size, size)).capture


@pytest.mark.parametrize("name", ["llama", "googlenet", "densenet121", "inception_v3"])
def test_pruned_cycle_check_partitions_like_the_full_search(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    capture = _capture(name)
    fast = part.partition(capture)
    # Every dependency is ordered below its dependant, and the orders are a permutation.
    groups, _ = grouping.group_ops(capture.ops, grouping.flow_of(capture))
    assert sorted(g.order for g in groups) == list(range(len(groups)))
    assert all(groups[d].order < g.order for g in groups for d in g.deps)
    assert all(g.dependants == {x for x, h in enumerate(groups) if i in h.deps}
               for i, g in enumerate(groups))
    # The same subgraphs as with the exhaustive search.
    monkeypatch.setattr(grouping, "depends_on", _naive_depends_on)
    slow = part.partition(capture)
    assert [(s.ops, s.depends_on, s.stage) for s in fast.subgraphs] == [
        (s.ops, s.depends_on, s.stage) for s in slow.subgraphs
    ]


@pytest.mark.parametrize("seed", range(5))
def test_the_order_stays_topological_and_the_pruned_search_is_exact(seed: int) -> None:
    # Random DAGs grown the way the partitioner grows them: new groups depend on older ones;
    # existing groups gain dependencies on newer ones (a fused op joining an older subgraph)
    # unless that closes a cycle. After every step the order is topological and the pruned
    # search answers exactly like the exhaustive one, for every pair.
    import random

    rng = random.Random(seed)
    groups: list[order.Group] = []
    for step in range(120):
        if not groups or rng.random() < 0.6:
            new = order.Group("x", "chain", [step], ["x"], order=len(groups))
            groups.append(new)
            g = len(groups) - 1
            deps = {rng.randrange(g) for _ in range(rng.randint(0, 2))} if g else set()
        else:
            g = rng.randrange(len(groups))
            deps = {rng.randrange(len(groups)) for _ in range(rng.randint(1, 2))} - {g}
            deps = {h for h in deps if not _naive_depends_on(groups, h, g)}
        order.add_deps(groups, g, deps)
        assert sorted(x.order for x in groups) == list(range(len(groups)))
        assert all(groups[d].order < x.order for x in groups for d in x.deps)
    pairs = [(a, b) for a in range(len(groups)) for b in range(len(groups)) if a != b]
    assert all(
        order.depends_on(groups, a, b) == _naive_depends_on(groups, a, b) for a, b in pairs
    )
    assert any(_naive_depends_on(groups, a, b) for a, b in pairs)  # not a trivial graph
