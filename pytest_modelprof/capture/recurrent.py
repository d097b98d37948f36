"""Recurrent modules on meta tensors: one op (aten.lstm, ...), not a per-step decomposition."""

from __future__ import annotations

from typing import Any, Protocol

import torch
from torch.overrides import TorchFunctionMode

from pytest_modelprof._compat import op_schema
from pytest_modelprof._tensors import flat_tensors
from pytest_modelprof.errors import FormulaError, clause

__all__ = ["RecurrentOnMeta"]


class OpSink(Protocol):
    """What recording one op needs from the tracer (``capture.tracer.Tracer`` is one).

    A protocol, so this module depends on nothing in ``tracer`` and the import runs one way.
    """

    paused: bool

    def record_op(
        self, func: Any, args: tuple[Any, ...], kwargs: dict[str, Any], out: Any
    ) -> None: ...


# torch.lstm & co. On CPU and CUDA they reach the dispatcher as fused
# kernels (mkldnn_rnn_layer, _cudnn_rnn); on meta tensors they decompose into a dozen ops per
# time step and layer, which made an LSTM model 25x slower to profile than on fake tensors.
_RECURRENT = frozenset({"lstm", "gru", "rnn_tanh", "rnn_relu"})


class RecurrentOnMeta(TorchFunctionMode):
    """Records ``torch.lstm/gru/rnn_*`` on meta tensors as one op (aten.lstm, ...).

    Only without autograd: when gradients are needed the op runs (and decomposes) as usual,
    so the backward graph exists. The outputs are empty meta tensors of the right shapes.
    """

    def __init__(self, tracer: OpSink) -> None:
        super().__init__()
        self.tracer = tracer

    def __torch_function__(
        self, func: Any, types: Any, args: tuple[Any, ...] = (), kwargs: Any = None
    ) -> Any:
        kwargs = kwargs or {}
        name = getattr(func, "__name__", "")
        if name in _RECURRENT:
            out = record_recurrent(self.tracer, name, args, kwargs)
            if out is not None:
                return out
        return func(*args, **kwargs)


def record_recurrent(
    tracer: OpSink, name: str, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> tuple[torch.Tensor, ...] | None:
    """One op for a whole recurrent module on meta tensors; ``None``: let it run."""
    if not args or not isinstance(args[0], torch.Tensor) or not args[0].is_meta:
        return None
    if torch.is_grad_enabled() and any(t.requires_grad for t in flat_tensors(args)):
        return None
    packet = getattr(torch.ops.aten, name)
    # A packed sequence calls the .data overload, (data, batch_sizes, hx, params, ...):
    # lstm's hx is a list, so its second argument is a tensor only when packed; gru's and
    # rnn's hx is a tensor, so their third argument is a tensor only when packed.
    packed = isinstance(args[1] if name == "lstm" else args[2], torch.Tensor)
    overload = packet.data if packed else packet.input
    try:
        a: dict[str, Any] = dict(
            zip((arg.name for arg in op_schema(overload).arguments), args, strict=False)
        )
        a.update(kwargs)
        x: torch.Tensor = a["data"] if packed else a["input"]
        h_out = int(a["params"][1].shape[1])  # w_hh of layer 0: (gates * hidden, hidden_out)
        directions = 2 if a["bidirectional"] else 1
        hx = a["hx"]
        states = list(hx) if isinstance(hx, (list, tuple)) else [hx]
        tracer.paused = True
        output = x.new_empty((*x.shape[:-1], directions * h_out))
        out = (output, *(h.new_empty(h.shape) for h in states))
    except Exception as exc:
        raise FormulaError(
            f"pricing {overload} as one op on meta tensors failed with "
            f"{type(exc).__name__}: {clause(exc)}. This is a bug in pytest-modelprof, not in your "
            "model or its inputs; please report it (with this message)."
        ) from exc
    finally:
        tracer.paused = False
    tracer.record_op(overload, args, kwargs, out)
    return out
