"""Parsers of the marker's shape arguments: ``input_shape=`` and ``sweep=``.

Torch-free; each error names where the value came from and what to write instead.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pytest_modelprof.errors import SettingsError

__all__ = ["parse_input_shape", "parse_sweep"]


def parse_sweep(value: object, source: str) -> dict[str, list[int]] | None:
    """``{"batch": [1, 8, 32]}``: each axis with two or more increasing positive sizes.

    Besides the shape axes, any builder keyword of a named model is an axis
    (``{"num_hidden_layers": [2, 4, 8]}``): the model is rebuilt with each value.
    """
    if value is None:
        return None
    axes = ("batch", "seq_len", "input_size")
    ok = isinstance(value, Mapping) and bool(value)
    out: dict[str, list[int]] = {}
    if isinstance(value, Mapping) and value:
        for axis, sizes in value.items():
            named = isinstance(axis, str) and axis.isidentifier()
            if not named or not isinstance(sizes, Sequence) or isinstance(sizes, str):
                ok = False
                break
            ints = list(sizes)
            if len(ints) < 2 or not all(isinstance(v, int) and v > 0 for v in ints):
                ok = False
                break
            if sorted(set(ints)) != ints:
                ok = False
                break
            out[str(axis)] = ints
    if not ok:
        raise SettingsError(
            f"{source}: sweep={value!r} is not a sweep; write e.g. sweep={{'batch': [1, 8, 32]}} "
            f"with axes from {', '.join(axes)} (or a builder keyword of the model, such as "
            f"num_hidden_layers) and two or more increasing sizes each"
        )
    return out


def parse_input_shape(value: object, source: str) -> Any:
    """``[1, 3, 64, 64]`` -> ``(1, 3, 64, 64)``; several inputs as a tuple of shapes."""
    if value is None:
        return None

    def shape(v: object) -> tuple[int, ...] | None:
        if isinstance(v, Sequence) and not isinstance(v, str) and v:
            if all(isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in v):
                return tuple(v)
        return None

    single = shape(value)
    if single is not None:
        return single
    if isinstance(value, Sequence) and not isinstance(value, str) and value:
        many = [shape(v) for v in value]
        if all(s is not None for s in many):
            return tuple(many)
    raise SettingsError(
        f"{source}: input_shape={value!r} is not a shape; write e.g. (1, 3, 224, 224) "
        f"or a list of shapes for several inputs"
    )
