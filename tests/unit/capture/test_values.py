"""On fake tensors, what a forward computes from its inputs and constants alone keeps values."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from pytest_modelprof.capture.values import KNOWN_VALUES_LIMIT_BYTES
from pytest_modelprof.errors import ModelprofError
from pytest_modelprof.profile import profile_model


class ChecksItsMask(nn.Module):
    """Takes a shortcut when the mask has no padding, as transformers' attention does."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(8, 8)

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        if mask.bool().all():  # reads values: the input's, on every mode that has them
            return self.lin(x)
        return self.lin(x) * mask[..., None]


def test_a_forward_reading_its_inputs_values_runs_on_fake_tensors_as_on_real() -> None:
    inputs = {"x": torch.randn(2, 4, 8), "mask": torch.ones(2, 4, dtype=torch.long)}
    fake = profile_model(ChecksItsMask(), inputs=inputs, mode="fake")
    real = profile_model(ChecksItsMask(), inputs=inputs, mode="real")
    # The linear layer (2 FLOPs a multiply-add, plus its bias) and the mask's all() over 8.
    assert fake.total_flops == real.total_flops == 2 * 4 * 8 * 8 * 2 + 2 * 4 * 8 + 2 * 4
    padded = {**inputs, "mask": torch.tensor([[1, 1, 1, 0], [1, 1, 1, 1]])}
    fake_padded = profile_model(ChecksItsMask(), inputs=padded, mode="fake")
    real_padded = profile_model(ChecksItsMask(), inputs=padded, mode="real")
    assert fake_padded.total_flops == real_padded.total_flops
    assert fake_padded.total_flops > real.total_flops  # the other path: the mask multiplies


class WritesWeightValuesIntoItsMask(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(8, 1)

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        keep = mask.clone()
        keep.mul_(self.lin(x)[..., 0] > 0)  # values from the weights: unknown on fake tensors
        if keep.all():
            return x
        return x * 2


def test_a_real_tensor_written_with_fake_values_has_no_values_any_more() -> None:
    inputs = {"x": torch.randn(2, 4, 8), "mask": torch.ones(2, 4, dtype=torch.long)}
    with pytest.raises(ModelprofError, match="could not be profiled in fake mode"):
        profile_model(WritesWeightValuesIntoItsMask(), inputs=inputs, mode="fake")


class ChecksALargeMask(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        n = KNOWN_VALUES_LIMIT_BYTES // 4 + 1  # float32 elements just over the limit
        if torch.ones(n, device=x.device).all():
            return x + 1
        return x


def test_a_large_tensor_stays_fake() -> None:
    # Nothing above the limit is computed (or allocated) during a fake capture.
    with pytest.raises(ModelprofError, match="could not be profiled in fake mode"):
        profile_model(ChecksALargeMask(), input_shape=(2, 8), mode="fake")
