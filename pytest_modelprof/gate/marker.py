"""One test's ``@pytest.mark.profile(...)``: its arguments, resolved over the session limits.

:func:`resolve_marker` checks every argument (unknown ones are errors with the nearest name),
builds the :class:`~pytest_modelprof.gate.request.ProfileRequest` and layers the marker's limits
over the session's. Standard library only.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from pytest_modelprof.baseline.metrics import active_metrics
from pytest_modelprof.errors import SettingsError, did_you_mean
from pytest_modelprof.fit.options import STEP_KEYS as STEP_ARGS
from pytest_modelprof.gate.limits import SETTINGS, Limits, limit_names
from pytest_modelprof.gate.request import ProfileRequest, parse_capture_options
from pytest_modelprof.gate.shapes import parse_input_shape, parse_sweep
from pytest_modelprof.llm.marker import parse_llm

__all__ = ["MARKER_SIGNATURE", "MarkerSpec", "resolve_marker"]

#: Marker-only arguments: what to profile and how (``sweep`` names the axes of a scaling sweep;
#: ``dtype``, ``mode``, ``include_backward`` go to ``profile_model``, STEP_ARGS to fit).
MARKER_ARGS: Final = (
    "model", "input_shape", "inputs", "device", "name", "sweep",
    "dtype", "mode", "include_backward", "llm", *STEP_ARGS,
)
#: The marker's signature as ``pytest --markers`` shows it (limits by pattern, not one by one).
MARKER_SIGNATURE: Final = (
    "profile(model=None, input_shape=None, inputs=None, device=None, name=None, sweep=None, "
    "dtype=None, mode='auto', include_backward=False, llm=None, optimizer='adamw', "
    "precision='fp32', device_count=1, shard='none', checkpointing=False, fvcore=False, "
    "timing_verdicts=None, timing_rounds=100, fail_on_uncounted=False, fail_on_improvement=None, "
    "compile_dynamic=None, max_<metric>=None, max_<metric>_delta=None, max_<metric>_growth=None)"
)


@dataclass(frozen=True)
class MarkerSpec:
    """One test's ``@pytest.mark.profile``, resolved over the session settings."""

    request: ProfileRequest | None  # None: the test calls the ``modelprof`` fixture
    name: str | None
    input_shape: Any
    device: str | None
    limits: Limits
    sweep: Mapping[str, list[int]] | None = None
    capture: Mapping[str, Any] = field(default_factory=dict)  # dtype, mode, ..., llm, step


def resolve_marker(
    args: Sequence[object],
    kwargs: Mapping[str, object],
    base: Limits,
    *,
    where: str,
) -> MarkerSpec:
    """One ``@pytest.mark.profile(...)`` over the session limits; unknown arguments are errors."""
    source = f"marker on {where}"
    if len(args) > 1:
        raise SettingsError(
            f"{source}: profile() takes at most one positional argument (the model), "
            f"got {len(args)}; pass the rest by keyword, e.g. input_shape=(1, 3, 224, 224)"
        )
    values = dict(kwargs)
    if args:
        if "model" in values:
            raise SettingsError(f"{source}: model given both positionally and as model=")
        values["model"] = args[0]
    known = (*MARKER_ARGS, *SETTINGS, *limit_names())
    unknown = sorted(k for k in values if k not in known)
    if unknown:
        near = [did_you_mean(k, known) for k in unknown]
        raise SettingsError(
            f"{source}: unknown argument{'s' if len(unknown) > 1 else ''} "
            f"{', '.join(unknown)} for @pytest.mark.profile{''.join(near)}"
            # A near miss says enough; a word nothing resembles gets the patterns, not the list.
            + ("" if all(near) else "; a limit is max_<metric>, max_<metric>_delta or "
               "max_<metric>_growth; pytest --markers lists the other arguments")
        )
    name = values.get("name")
    if name is not None and (not isinstance(name, str) or not name):
        raise SettingsError(f"{source}: name={name!r} must be a non-empty string")
    device = values.get("device")
    if device is not None and not isinstance(device, str):
        device = str(device)  # torch.device("cpu") -> "cpu"
    input_shape = parse_input_shape(values.get("input_shape"), source)
    # fail_on_uncounted is both: profile_model raises at the profile (the fixture's calls too),
    # and the gate fails on any uncounted op of a profile that got through.
    capture = parse_capture_options(values, source)
    if values.get("llm") is not None:  # serving costs; a fixture call inherits it as capture does
        capture["llm"] = parse_llm(values["llm"], source)
    names = (*SETTINGS, *limit_names())
    limits = base.with_values({k: v for k, v in values.items() if k in names}, source)
    sweep = parse_sweep(values.get("sweep"), source)
    # Growth limits from the CLI or ini apply to tests with a sweep; in a marker they need one.
    growth_keys = active_metrics().growth_limits()
    marker_growth = sorted(k for k in values if k in growth_keys and k in limits.growth)
    if marker_growth and sweep is None:
        raise SettingsError(
            f"{source}: {', '.join(marker_growth)} needs a sweep, e.g. "
            f"sweep={{'batch': [1, 8, 32]}}"
        )
    model = values.get("model")
    request = None
    if model is not None:
        request = ProfileRequest(model, input_shape, values.get("inputs"), device, name, **capture)
    return MarkerSpec(request, name, input_shape, device, limits, sweep, capture)
