"""A conv -> norm -> activation block, and two ways of breaking its fusion (equal FLOPs)."""

from __future__ import annotations

import torch
from torch import nn


class ConvBnRelu(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(8, 16, 3, padding=1, bias=False)
        self.bn = nn.BatchNorm2d(16)
        self.relu = nn.ReLU()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out: torch.Tensor = self.relu(self.bn(self.conv(x)))
        return out


class Tapped(ConvBnRelu):
    """The conv output is also returned: it must be written, so the norm cannot fuse."""

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:  # type: ignore[override]
        y = self.conv(x)
        return self.relu(self.bn(y)), y


class Cloned(ConvBnRelu):
    """A clone between conv and norm: a copy kernel that no conv epilogue absorbs."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out: torch.Tensor = self.relu(self.bn(self.conv(x).clone()))
        return out
