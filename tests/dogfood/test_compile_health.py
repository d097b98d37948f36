"""This repository gates the compile health of its own zoo: graph breaks and recompiles.

The baselines live in ``baselines/tests/dogfood/test_compile_health/``; after an intended
change, run ``pytest tests/dogfood/test_compile_health.py --modelprof-update-baselines``.
"""

from __future__ import annotations

import pytest


# One graph, no break (a budget: holds with or without a baseline). Over batch sizes 1, 2, 4
# torch.compile's automatic dynamic shapes recompile once, when the batch size first changes.
@pytest.mark.profile(
    model="resnet18",
    input_shape=(1, 3, 64, 64),
    max_graph_breaks=0,
    max_recompiles=1,
    sweep={"batch": [1, 2, 4]},
)
def test_resnet18_compiles_to_one_graph() -> None:
    pass


# YOLOv8n breaks in its anchor code (data-dependent ops); no new break may join them.
@pytest.mark.profile(model="yolov8n.yaml", input_shape=(1, 3, 64, 64), max_graph_breaks_delta=0)
def test_yolov8n_gains_no_graph_break() -> None:
    pytest.importorskip("ultralytics")
