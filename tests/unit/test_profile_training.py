"""``include_backward=True`` profiles the training graph and says so.

Train mode: dropout runs as the model has it (its ``p``), batch norm normalises with batch
statistics and updates its running ones — the graph ``time_training_step`` runs too. Forward
only profiles stay in eval mode. The user's module keeps its own flags either way.
"""

from __future__ import annotations

import pytest
import torch
from torch import nn

from pytest_modelprof.capture.plan import TRAINING_GRAPH_NOTE
from pytest_modelprof.profile import profile_model, profile_with_capture


class Net(nn.Module):
    def __init__(self, p: float) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3, padding=1)
        self.bn = nn.BatchNorm2d(4)
        self.drop = nn.Dropout(p)
        self.fc = nn.Linear(4, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.drop(torch.relu(self.bn(self.conv(x))))
        return self.fc(h.mean(dim=(2, 3)))


def _forward_flops(model: nn.Module, mode: str, backward: bool) -> dict[str, int]:
    cap = profile_with_capture(
        model, input_shape=(2, 3, 8, 8), mode=mode, include_backward=backward  # type: ignore[arg-type]
    ).capture
    flops: dict[str, int] = {}
    for op in cap.ops:
        if op.phase == "forward":
            flops[op.module] = flops.get(op.module, 0) + op.flops
    return flops


@pytest.mark.parametrize("mode", ["meta", "fake", "real"])
def test_include_backward_profiles_the_training_graph(mode: str) -> None:
    model = Net(p=0.5).eval()  # the user's module is in eval mode; training still trains
    inference = _forward_flops(model, mode, backward=False)
    training = _forward_flops(model, mode, backward=True)
    assert inference.get("drop", 0) == 0  # eval: dropout is the identity
    assert training["drop"] > 0  # train: a random mask, scaled, multiplied in
    # Batch statistics (a mean and a variance over N, H, W) cost more than running ones.
    assert training["bn"] > inference["bn"]
    assert (training["conv"], training["fc"]) == (inference["conv"], inference["fc"])
    assert not model.training and not model.bn.training  # the user's flags are untouched


def test_dropout_runs_as_the_model_has_it() -> None:
    # p=0 in training is the identity: nothing to count.
    assert _forward_flops(Net(p=0.0), "meta", backward=True).get("drop", 0) == 0


def test_the_profile_says_which_graph_it_counted() -> None:
    training = profile_model(Net(p=0.5), input_shape=(2, 3, 8, 8), include_backward=True)
    assert training.include_backward
    assert TRAINING_GRAPH_NOTE in training.capture.reason
    assert "train mode" in training.capture.reason
    inference = profile_model(Net(p=0.5), input_shape=(2, 3, 8, 8))
    assert "train mode" not in inference.capture.reason
