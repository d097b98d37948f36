"""Fused recurrent kernels (cuDNN, oneDNN). The unfused path decomposes into mm + pointwise ops.

Per time step, batch row and direction, a cell with G gates (LSTM 4, GRU 3, RNN 1) computes
G*H outputs from the input (I) and the hidden state (H): G*H*(I + H) MACs. The pointwise work per
hidden unit is what the decomposed cell does, so fused and unfused paths count the same:
  LSTM 30: 8 bias adds, 4 gate sums, 3 sigmoids (4 each), tanh(g), c' = f*c + i*g (3),
           h' = o * tanh(c') (2)
  GRU  22: 6 bias adds, r and z (sum + sigmoid: 5 each), n = tanh(i_n + r*h_n) (3),
           h' = n + z*(h - n) (3)
  RNN   4: 2 bias adds, 1 sum, tanh or relu (1)
Without biases, subtract the bias adds (2 per gate).
"""

from __future__ import annotations

from typing import Any

from pytest_modelprof.costs.registry import Args, CostRegistry, OpCost, prod

__all__: list[str] = []

GATES = {0: 1, 1: 1, 2: 4, 3: 3}  # cuDNN/oneDNN modes: RNN_RELU, RNN_TANH, LSTM, GRU
CELL_FLOPS = {1: 4, 4: 30, 3: 22}  # per hidden unit, with biases, keyed by gate count


def _cell_flops(gates: int, has_biases: bool) -> int:
    return CELL_FLOPS[gates] - (0 if has_biases else 2 * gates)


def rnn_cost(
    rows: int, input_size: int, hidden: int, gates: int, directions: int, has_biases: bool = True
) -> OpCost:
    """``rows`` = time steps x batch."""
    macs = rows * gates * hidden * (input_size + hidden) * directions
    pointwise = rows * hidden * directions * _cell_flops(gates, has_biases)
    return OpCost(flops=2 * macs + pointwise, macs=macs)


def mkldnn_rnn_layer(a: Args, out: Any) -> OpCost:
    # One layer, one direction per call: input (T, B, I) or (B, T, I).
    x = a["input"]
    rows = x.shape[0] * x.shape[1]
    gates = GATES[int(a["mode"])]
    return rnn_cost(rows, x.shape[-1], int(a["hidden_size"]), gates, 1, bool(a["has_biases"]))


def cudnn_rnn(a: Args, out: Any) -> OpCost:
    x = a["input"]
    hidden = int(a["hidden_size"])
    gates = GATES[int(a["mode"])]
    directions = 2 if a["bidirectional"] else 1
    layers = int(a["num_layers"])
    rows = x.shape[0] * x.shape[1] if x.ndim == 3 else x.shape[0]
    # cuDNN packs biases with the weights; PyTorch always passes them for bias=True modules.
    biases = len(a["weight"]) // (layers * directions) == 4
    first = rnn_cost(rows, x.shape[-1], hidden, gates, directions, biases)
    rest = rnn_cost(rows, hidden * directions, hidden, gates, directions, biases)
    return OpCost(first.flops + (layers - 1) * rest.flops, first.macs + (layers - 1) * rest.macs)


def _recurrent_module(gates: int) -> Any:
    # aten.lstm/gru/rnn_tanh/rnn_relu: the whole multi-layer module in one op (on meta tensors
    # the capture prices it here instead of letting it decompose step by step). Sizes come
    # from the weights, per layer and direction: w_ih (G*H, I), w_hh (G*H, H_out),
    # [b_ih, b_hh], [w_hr (H_out, H) when an LSTM has proj_size].
    def formula(a: Args, out: Any) -> OpCost:
        # A packed sequence (.data overload) has one row per (step, sequence) in `data`.
        x = a["data"] if "data" in a else a["input"]
        rows = x.shape[0] if "data" in a else prod(x.shape[:-1])
        params = a["params"]
        has_biases = bool(a["has_biases"])
        blocks = int(a["num_layers"]) * (2 if a["bidirectional"] else 1)
        per_block = len(params) // blocks
        macs = pointwise = 0
        for b in range(blocks):
            w = params[b * per_block : (b + 1) * per_block]
            w_ih, w_hh = w[0], w[1]
            hidden = w_hh.shape[0] // gates
            macs += rows * (w_ih.numel + w_hh.numel)
            if per_block in (3, 5):  # LSTM projection h = w_hr @ h
                macs += rows * w[-1].numel
            pointwise += rows * hidden * _cell_flops(gates, has_biases)
        return OpCost(flops=2 * macs + pointwise, macs=macs)

    formula.__name__ = f"recurrent_module_{gates}"
    return formula


def _fused_cell(gates: int) -> Any:
    # _thnn_fused_*_cell: the pointwise part only (its matmuls ran as separate mm ops).
    def formula(a: Args, out: Any) -> OpCost:
        g = a["input_gates"]
        hidden_units = g.numel // gates
        return OpCost(hidden_units * _cell_flops(gates, a.get("input_bias") is not None))

    formula.__name__ = f"fused_cell_{gates}"
    return formula


def register(reg: CostRegistry) -> None:
    import torch

    aten = torch.ops.aten
    reg.register(aten.mkldnn_rnn_layer, family="rnn")(mkldnn_rnn_layer)
    reg.register(aten._cudnn_rnn, aten.miopen_rnn, family="rnn")(cudnn_rnn)
    reg.register(aten.lstm, family="rnn")(_recurrent_module(4))
    reg.register(aten.gru, family="rnn")(_recurrent_module(3))
    reg.register(aten.rnn_tanh, aten.rnn_relu, family="rnn")(_recurrent_module(1))
    reg.register(aten._thnn_fused_lstm_cell, family="rnn")(_fused_cell(4))
    reg.register(aten._thnn_fused_gru_cell, family="rnn")(_fused_cell(3))
