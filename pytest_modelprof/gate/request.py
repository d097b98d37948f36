"""What one test profiles and how: :class:`ProfileRequest`, from a marker or a fixture call.

Standard library only: the plugin builds requests at collection time.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from pytest_modelprof.errors import SettingsError, did_you_mean
from pytest_modelprof.fit.options import STEP_KEYS as STEP_ARGS
from pytest_modelprof.fit.options import step_pairs

__all__ = ["ProfileRequest", "parse_capture_options"]

#: The capture modes ``mode=`` accepts (see ``profile_model``).
MODES: Final = ("auto", "meta", "fake", "real")


@dataclass(frozen=True)
class ProfileRequest:
    """What to profile: a model name or module plus its inputs, and how to capture it."""

    model: Any
    input_shape: Any = None
    inputs: Any = None
    device: str | None = None
    name: str | None = None
    dtype: str | None = None
    mode: str = "auto"
    include_backward: bool = False
    fail_on_uncounted: bool = False  # profile_model raises on an op without a cost formula
    llm: tuple[tuple[str, Any], ...] | None = None  # the marker's llm= (serving costs)
    # optimizer, precision, device_count, shard, checkpointing of the memory metrics' step (pairs)
    step: tuple[tuple[str, Any], ...] = ()

    def engine_kwargs(self) -> dict[str, Any]:
        """The keyword arguments of ``profile_model`` this request sets."""
        out: dict[str, Any] = {}
        for key in ("input_shape", "inputs", "device", "dtype"):
            value = getattr(self, key)
            if value is not None:
                out[key] = value
        if self.mode != "auto":
            out["mode"] = self.mode
        if self.include_backward:
            out["include_backward"] = True
        if self.fail_on_uncounted:
            out["fail_on_uncounted"] = True
        return out


def parse_capture_options(values: Mapping[str, object], source: str) -> dict[str, Any]:
    """``dtype``, ``mode``, ``include_backward`` and ``fail_on_uncounted`` of a marker or fixture
    call."""
    out: dict[str, Any] = {}
    dtype = values.get("dtype")
    if dtype is not None:
        text = str(dtype).removeprefix("torch.")
        if not text.isidentifier():
            raise SettingsError(f"{source}: dtype={dtype!r} is not a dtype; write e.g. 'bfloat16'")
        out["dtype"] = text
    mode = values.get("mode")
    if mode is not None:
        if mode not in MODES:
            raise SettingsError(
                f"{source}: mode={mode!r} is not a capture mode; expected one of "
                f"{', '.join(MODES)}{did_you_mean(str(mode), MODES)}"
            )
        out["mode"] = mode
    for key in ("include_backward", "fail_on_uncounted"):
        raw = values.get(key)
        if raw is not None:
            if not isinstance(raw, bool):
                raise SettingsError(f"{source}: {key}={raw!r} must be True or False")
            out[key] = raw
    if any(values.get(k) is not None for k in STEP_ARGS):
        out["step"] = step_pairs(values, source, SettingsError)
    return out
