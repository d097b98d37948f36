"""This repository gates itself: a small zoo profiled through the marker and the fixture.

The baselines live in ``baselines/tests/dogfood/``; after an intended cost change, run
``pytest tests/dogfood --modelprof-update-baselines`` and commit the diff.
"""

from __future__ import annotations

import pytest
import torch
from torch import nn


@pytest.mark.profile(model="resnet18", input_shape=(1, 3, 64, 64), max_flops="1G", max_params="12M")
def test_resnet18() -> None:
    pass


@pytest.mark.profile(model="mobilenet_v2", input_shape=(1, 3, 64, 64), max_params="4M")
def test_mobilenet_v2() -> None:
    pass


@pytest.mark.profile(model="vit_b_16", input_shape=(1, 3, 64, 64))
def test_vit_b_16() -> None:
    pass


@pytest.mark.profile(model="yolov8n.yaml", input_shape=(1, 3, 64, 64))
def test_yolov8n_from_yaml() -> None:
    pytest.importorskip("ultralytics")


class TinyNet(nn.Module):
    """Conv -> ReLU -> global pool -> Linear, small enough to count by hand."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 8, kernel_size=3, padding=1)
        self.fc = nn.Linear(8, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.relu(self.conv(x)).mean(dim=(2, 3))
        out: torch.Tensor = self.fc(y)
        return out


@pytest.mark.profile(max_flops_delta=0.0)
def test_custom_module_through_fixture(modelprof: object) -> None:
    profile = modelprof(TinyNet(), input_shape=(1, 3, 16, 16))  # type: ignore[operator]
    # params: conv 8*3*3*3 + 8 = 224, fc 8*10 + 10 = 90
    assert profile.total_params == 314
    # conv MACs: 16*16 output pixels * 8 channels * 27 taps = 55_296; fc: 80
    assert profile.total_macs == 55_296 + 80
