"""The session's profile cache and the call into the engine (torch is imported on first use)."""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import TYPE_CHECKING, Any

from pytest_modelprof.gate.request import ProfileRequest

if TYPE_CHECKING:
    from pytest_modelprof.schema import ModelProfile

__all__ = ["ProfileCache", "call_profile_model"]

ProfileFn = Callable[[ProfileRequest], "ModelProfile"]


class ProfileCache:
    """Profiles already taken in this session, keyed by everything that changes a profile.

    Names and shapes are keyed by value. Module and tensor objects are keyed by identity plus
    what a profile depends on: a module's type, repr, training flag and every parameter's and
    buffer's shape, dtype and device (so ``model.half()`` or ``.to("meta")`` is profiled again);
    a tensor's shape, dtype and device. The request's device, dtype, mode, backward and
    fail_on_uncounted flags are part of the key. Objects are kept alive by the cache so that an
    ``id`` cannot be reused by another object during the session.
    """

    def __init__(self) -> None:
        self._entries: dict[Hashable, tuple[object, ModelProfile]] = {}
        self.hits = 0

    @staticmethod
    def _key(request: ProfileRequest) -> Hashable:
        def obj_key(value: object) -> Hashable:
            if value is None or isinstance(value, (str, int, float, bool)):
                return ("value", value)
            if isinstance(value, tuple) and all(
                isinstance(v, (int, tuple)) or v is None for v in value
            ):
                return ("value", value)
            if isinstance(value, (list, tuple)):
                return ("seq", tuple(obj_key(v) for v in value))
            if isinstance(value, dict):
                return ("dict", tuple(sorted((str(k), obj_key(v)) for k, v in value.items())))
            shape = getattr(value, "shape", None)
            extra: Hashable = None
            if shape is not None:
                extra = (tuple(shape), str(getattr(value, "dtype", "")),
                         str(getattr(value, "device", "")))
            if hasattr(value, "training") and callable(getattr(value, "parameters", None)):
                extra = (getattr(value, "training", None), repr(value), _module_state(value))
            return ("object", id(value), type(value).__qualname__, extra)

        return (
            obj_key(request.model),
            obj_key(request.input_shape),
            obj_key(request.inputs),
            request.device,
            request.dtype,
            request.mode,
            request.include_backward,
            request.fail_on_uncounted,
        )

    def get_or_profile(self, request: ProfileRequest, profile_fn: ProfileFn) -> ModelProfile:
        """The cached profile for ``request``, or a new one from ``profile_fn``."""
        key = self._key(request)
        entry = self._entries.get(key)
        if entry is not None:
            self.hits += 1
            return entry[1]
        profile = profile_fn(request)
        self._entries[key] = ((request.model, request.inputs), profile)
        return profile


def _module_state(module: object) -> Hashable:
    """Every submodule's training flag and every tensor's shape, dtype and device."""
    modules = getattr(module, "modules", None)
    state_dict = getattr(module, "state_dict", None)
    flags = tuple(bool(m.training) for m in modules()) if callable(modules) else ()
    tensors: tuple[Hashable, ...] = ()
    if callable(state_dict):
        tensors = tuple(
            (key, _shape(t), str(t.dtype), str(t.device))
            for key, t in state_dict(keep_vars=True).items()
            if hasattr(t, "dtype") and hasattr(t, "device")
        )
    return (flags, tensors)


def _shape(t: Any) -> tuple[int, ...] | None:
    """A tensor's shape; None for a lazy layer's uninitialised parameter, which has none yet."""
    try:
        return tuple(t.shape)
    except (RuntimeError, AttributeError):
        return None


def call_profile_model(request: ProfileRequest) -> ModelProfile:
    """Profile with the real engine; imports torch on first use, never at plugin import."""
    from pytest_modelprof.profile import profile_model

    return profile_model(request.model, **request.engine_kwargs())


