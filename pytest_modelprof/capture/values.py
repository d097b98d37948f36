"""On fake tensors, what a forward computes from its inputs and constants alone keeps its values.

Fake tensors stand for the weights and everything computed from them; the inputs a user gives
are real, and so are the tensors a forward makes from them and from constants (an attention
mask, position ids, a mask of ones made inside the forward). Fake mode would turn those into
fake tensors too, and a forward that reads their values takes another path than it takes on
real tensors: transformers checks whether an attention mask has padding and, with none, builds
no mask; on a fake mask it cannot tell, builds the mask and counts its ops. So an op whose
tensor arguments all hold values runs on the real kernel and returns real tensors, as on real
tensors, when its outputs are small (:data:`KNOWN_VALUES_LIMIT_BYTES` in all, judged from the
fake kernel's outputs first, so nothing large is ever allocated) and on a device the run
already uses. A real tensor that a fake op writes into (``mask.masked_fill_(fake, ...)``) has
no known values afterwards: every later op that reads its storage runs on fake tensors.
"""

from __future__ import annotations

from typing import Any, Final

import torch

from pytest_modelprof._compat import has_data, op_schema, storage_key
from pytest_modelprof._tensors import flat_tensors

__all__ = ["KnownValues"]

KNOWN_VALUES_LIMIT_BYTES: Final = 16 * 2**20
"""The most bytes one op's outputs may take to be computed for real during a fake capture: a
padding mask of 2 M tokens, a float mask of 2,048 x 2,048; larger results stay fake."""

_CPU = torch.device("cpu")


class KnownValues:
    """Which ops of one fake capture run on the real kernel: those whose arguments hold values.

    The tracer asks :meth:`known` before an op, runs the fake kernel, and runs the real one
    where :meth:`computable` says so; otherwise :meth:`forget_written` marks what went unknown.
    """

    def __init__(self) -> None:
        # Storages a fake op wrote into: their values are unknown from then on. The storage
        # objects are held, so that their keys are not reused while the capture runs.
        self._unknown: dict[int, torch.UntypedStorage] = {}

    def known(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
        """Whether every tensor argument is real and holds values (none written by fake ops)."""
        return all(
            has_data(t) and storage_key(t.untyped_storage()) not in self._unknown
            for t in flat_tensors((args, kwargs))
        )

    def computable(self, fake_out: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
        """Whether an op with known arguments may run for real: the fake kernel refused it
        (``fake_out`` None: it needs the values), or its outputs are within the limit, on the
        CPU or a device the real arguments are already on."""
        if fake_out is None:
            return True
        devices = {_CPU, *(t.device for t in flat_tensors((args, kwargs)))}
        total = 0
        for t in flat_tensors(fake_out):
            if t.device not in devices:
                return False
            total += t.numel() * t.element_size()
        return total <= KNOWN_VALUES_LIMIT_BYTES

    def forget_written(self, func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        """Real tensors an op on fake tensors wrote into hold unknown values from now on."""
        schema = op_schema(func)
        for i, arg in enumerate(schema.arguments):
            if arg.alias_info is None or not arg.alias_info.is_write:
                continue
            value = kwargs.get(arg.name, args[i] if i < len(args) else None)
            for t in flat_tensors(value):
                if has_data(t):
                    storage = t.untyped_storage()
                    self._unknown[storage_key(storage)] = storage
