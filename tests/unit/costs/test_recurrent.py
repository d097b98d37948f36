"""Recurrent layers: the same counts on meta, fake and real tensors, without per-step ops."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from pytest_modelprof.profile import profile_model


def counts(model: nn.Module, x: torch.Tensor | tuple[object, ...], mode: str) -> tuple[int, int]:
    inputs = x if isinstance(x, tuple) else (x,)
    p = profile_model(model, inputs=inputs, mode=mode)  # type: ignore[arg-type]
    assert p.uncounted_ops == []
    return p.total_flops, p.total_macs


def test_lstm_closed_form() -> None:
    # LSTM(8 -> 16), 2 layers, bidirectional, batch 2 x 5 steps = 10 rows per direction.
    # Layer 0: 4 gates x 16 x (8 + 16) = 1536 MACs a row, x 2 directions x 10 rows = 30720.
    # Layer 1 (input 2 x 16 = 32): 4 x 16 x (32 + 16) = 3072, x 2 x 10 = 61440. MACs 92160.
    # Pointwise: 30 per hidden unit: 10 rows x 16 x 2 directions x 30 x 2 layers = 19200.
    lstm = nn.LSTM(8, 16, num_layers=2, bidirectional=True, batch_first=True)
    x = torch.randn(2, 5, 8)
    expected = (2 * 92160 + 19200, 92160)
    assert counts(lstm, x, "meta") == counts(lstm, x, "fake") == counts(lstm, x, "real")
    assert counts(lstm, x, "meta") == expected


@pytest.mark.filterwarnings("ignore:LSTM with projections is not supported with oneDNN")
@pytest.mark.parametrize(
    "make",
    [
        lambda: nn.GRU(8, 16, num_layers=2),
        lambda: nn.GRU(8, 16, bias=False, bidirectional=True),
        lambda: nn.RNN(8, 16, nonlinearity="tanh"),
        lambda: nn.RNN(8, 16, nonlinearity="relu", num_layers=3),
        lambda: nn.LSTM(8, 16, proj_size=4, num_layers=2),
        lambda: nn.LSTM(8, 16, bias=False),
    ],
    ids=["gru", "gru-nobias-bi", "rnn-tanh", "rnn-relu-3", "lstm-proj", "lstm-nobias"],
)
def test_meta_counts_equal_real_counts(make: object) -> None:
    model = make()  # type: ignore[operator]
    x = torch.randn(6, 3, 8)
    assert counts(model, x, "meta") == counts(model, x, "real")


def test_unbatched_and_packed_sequences() -> None:
    lstm = nn.LSTM(8, 16)
    x = torch.randn(6, 8)  # unbatched: 6 steps
    assert counts(lstm, x, "meta") == counts(lstm, x, "real")

    class Packed(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.gru = nn.GRU(8, 16)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            packed = nn.utils.rnn.pack_padded_sequence(x, [6, 4, 3], enforce_sorted=True)
            out, h = self.gru(packed)
            return h

    # Packed: 6 + 4 + 3 = 13 rows, 3 x 16 x (8 + 16) = 1152 MACs each -> 14976 MACs.
    flops, macs = counts(Packed(), torch.randn(6, 3, 8), "real")
    assert macs == 13 * 1152


def test_meta_capture_does_not_grow_with_sequence_length() -> None:
    # The per-step decomposition made 50 steps cost ~10x the ops of 5 steps on meta tensors.
    lstm = nn.LSTM(8, 16, num_layers=2, bidirectional=True)
    short = profile_model(lstm, input_shape=(5, 2, 8), mode="meta")
    long = profile_model(lstm, input_shape=(50, 2, 8), mode="meta")
    assert short.num_ops == long.num_ops
    assert long.total_macs == 10 * short.total_macs


def test_backward_on_meta_still_decomposes_and_counts() -> None:
    # With gradients the recurrent op must run for real (its graph feeds autograd).
    lstm = nn.LSTM(8, 16)
    p = profile_model(lstm, input_shape=(5, 2, 8), mode="meta", include_backward=True)
    assert p.forward_macs == 10 * 4 * 16 * (8 + 16)
    assert p.backward_macs > 0


@pytest.mark.slow
def test_timm_sequencer_on_meta_counts_like_fake() -> None:
    timm = pytest.importorskip("timm")
    with torch.device("meta"):
        model = timm.create_model("sequencer2d_s", pretrained=False)
    on_meta = profile_model(model, input_shape=(1, 3, 224, 224), mode="meta")
    real_model = timm.create_model("sequencer2d_s", pretrained=False)
    on_fake = profile_model(real_model, input_shape=(1, 3, 224, 224), mode="fake")
    assert (on_meta.total_flops, on_meta.total_macs) == (on_fake.total_flops, on_fake.total_macs)
    assert on_meta.uncounted_ops == []
    assert on_meta.num_ops < 2 * on_fake.num_ops  # no per-step decomposition
