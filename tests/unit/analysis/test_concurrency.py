"""Stages and critical path on hand-drawn DAGs."""

from __future__ import annotations

import pytest

from pytest_modelprof.analysis.concurrency import concurrency, critical_path, stages


def test_diamond() -> None:
    #   0 -> 1 -> 3
    #   0 -> 2 -> 3      FLOPs 1, 5, 2, 1: the path through 1 is heavier (1+5+1 = 7).
    deps = [[], [0], [0], [1, 2]]
    assert stages(deps) == [0, 1, 1, 2]
    c = concurrency(stages(deps))
    assert (c.num_stages, c.max_parallel, c.stage_sizes) == (3, 2, [1, 2, 1])
    assert c.mean_parallel == 4 / 3
    path = critical_path(deps, [1, 5, 2, 1])
    assert path.nodes == [0, 1, 3] and path.flops == 7 and path.share == pytest.approx(7 / 9)


def test_independent_chains_pick_the_heaviest() -> None:
    deps = [[], [0], [], [2]]
    assert stages(deps) == [0, 1, 0, 1]
    assert critical_path(deps, [1, 1, 3, 1]).nodes == [2, 3]


def test_ties_go_to_the_lower_number() -> None:
    deps = [[], [], [0, 1]]
    assert critical_path(deps, [2, 2, 1]).nodes == [0, 2]


def test_empty_graph() -> None:
    assert stages([]) == []
    assert concurrency([]).num_stages == 0
    assert critical_path([], []).nodes == []


def test_rejects_an_order_that_is_not_topological() -> None:
    with pytest.raises(ValueError, match="topological order"):
        stages([[1], []])
    with pytest.raises(ValueError, match="FLOP weights"):
        critical_path([[]], [1, 2])
