"""Real mode on a user's module that lives on meta: it runs on made-up weights, and says so."""

from __future__ import annotations

import torch
from torch import nn

from pytest_modelprof.profile import profile_model


def test_a_module_on_meta_runs_for_real_on_random_weights_and_says_so() -> None:
    with torch.device("meta"):
        model = nn.Sequential(nn.Linear(8, 16), nn.BatchNorm1d(16), nn.Linear(16, 4))
    p = profile_model(model, input_shape=(2, 8), mode="real")
    assert p.capture.mode == "real"
    assert "random weights: the module lives on meta and has none" in p.capture.reason
    # 2 rows x (8 x 16 + 16 x 4) MACs, as on meta.
    assert p.total_macs == 2 * (8 * 16 + 16 * 4)
    assert all(t.is_meta for t in model.parameters())  # the user's module stays on meta
