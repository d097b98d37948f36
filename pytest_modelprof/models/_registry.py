"""The one registry every model name resolves through.

Sources, in lookup order: user registrations (``@register_model`` and the
``pytest_modelprof.models`` entry-point group), the hub prefixes ``timm:`` and ``hf:``,
``module:factory`` import paths, ultralytics ``.pt`` files and YAML configs, then torchvision
builders. Nothing heavy is imported until a name is resolved or listed.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from importlib.metadata import EntryPoint, entry_points
from typing import Any, Final, TypeVar, final

from pytest_modelprof.errors import (
    DuplicateModelError,
    ModelNotFoundError,
    close_matches,
    suggestion,
)
from pytest_modelprof.models._hf import PREFIX as HF_PREFIX
from pytest_modelprof.models._hf import hf_names, hf_spec, is_hf_name
from pytest_modelprof.models._imports import import_spec, is_import_path
from pytest_modelprof.models._spec import InputKind, ModelSpec, Shape
from pytest_modelprof.models._timm import PREFIX as TIMM_PREFIX
from pytest_modelprof.models._timm import is_timm_name, timm_names, timm_spec
from pytest_modelprof.models._torchvision import GROUPS, torchvision_names, torchvision_spec
from pytest_modelprof.models._ultralytics import (
    checkpoint_spec,
    is_checkpoint_name,
    is_yaml_name,
    ultralytics_available,
    ultralytics_names,
    ultralytics_spec,
)

__all__ = [
    "ENTRY_POINT_GROUP",
    "DuplicateModelError",
    "Registry",
    "default_registry",
]

ENTRY_POINT_GROUP: Final = "pytest_modelprof.models"
REGISTERED_GROUP: Final = "registered"

F = TypeVar("F", bound=Callable[..., Any])


@final
class Registry:
    """Resolves names to ``ModelSpec``s; user registrations live on the instance.

    Use ``default_registry`` (what ``resolve``/``register_model`` use); make a fresh
    ``Registry()`` for isolation in tests. ``entry_point_group=None`` skips entry points.
    """

    def __init__(self, *, entry_point_group: str | None = ENTRY_POINT_GROUP) -> None:
        self._entry_point_group = entry_point_group
        self._registered: dict[str, ModelSpec] = {}
        self._entry_points: dict[str, EntryPoint] | None = None  # discovered on first use
        self._loaded: dict[str, ModelSpec] = {}

    # -- registration -------------------------------------------------------------------------

    def register(
        self,
        name: str,
        factory: Callable[..., Any],
        *,
        input_shape: Shape | None = None,
        input_kind: InputKind = "tensor",
        arch_kwargs: Mapping[str, Any] | None = None,
        vocab_size: int = 32_000,
    ) -> ModelSpec:
        """Register ``factory`` (returns an ``nn.Module``, or is a module class) under ``name``."""
        self._check_new_name(name, origin=f"register_model({name!r}) on {_describe(factory)}")
        spec = ModelSpec(
            name=name,
            source="registered",
            builder=factory,
            default_input_shape=input_shape,
            input_kind=input_kind,
            group=REGISTERED_GROUP,
            default_arch_kwargs=dict(arch_kwargs or {}),
            vocab_size=vocab_size,
        )
        self._registered[name] = spec
        return spec

    def register_model(
        self,
        name: str,
        *,
        input_shape: Shape | None = None,
        input_kind: InputKind = "tensor",
        arch_kwargs: Mapping[str, Any] | None = None,
        vocab_size: int = 32_000,
    ) -> Callable[[F], F]:
        """Decorator form of ``register``; returns the factory unchanged."""

        def decorate(factory: F) -> F:
            self.register(
                name,
                factory,
                input_shape=input_shape,
                input_kind=input_kind,
                arch_kwargs=arch_kwargs,
                vocab_size=vocab_size,
            )
            return factory

        return decorate

    def unregister(self, name: str) -> None:
        """Forget a ``register``-ed name (entry points cannot be unregistered)."""
        if name not in self._registered:
            raise ModelNotFoundError(
                f"cannot unregister {name!r}: it was not registered with register_model"
            )
        del self._registered[name]

    # -- lookup -------------------------------------------------------------------------------

    def resolve(self, name: str) -> ModelSpec:
        """The spec for ``name``; raises ``ModelNotFoundError`` with close matches otherwise."""
        if not isinstance(name, str) or not name.strip():
            raise ModelNotFoundError(f"model name must be a non-empty string, got {name!r}")
        name = name.strip()
        if name in self._registered:
            return self._registered[name]
        if name in self._discover():
            return self._load_entry_point(name)
        spec = _source_spec(name)
        if spec is not None:
            return spec
        raise self._not_found(name)

    def list_models(self, filter: str | None = None) -> dict[str, list[str]]:
        """Names by group (``torchvision.<task>``, ``ultralytics``, ``timm``, ``hf``,
        ``registered``), sorted.

        ``filter`` keeps names containing it, case-insensitively; when no name does, names
        containing it but for a typo (one edit in four characters: ``resnt`` finds ``resnet50``).
        Every group is always a key (``ultralytics``, ``timm`` and ``hf`` are empty when their
        extra is not installed).
        """
        tv = torchvision_names()
        groups: dict[str, list[str]] = {f"torchvision.{g}": list(tv[g]) for g in GROUPS}
        groups["ultralytics"] = list(ultralytics_names()) if ultralytics_available() else []
        groups["timm"] = list(timm_names())
        groups["hf"] = list(hf_names())
        groups[REGISTERED_GROUP] = sorted({*self._registered, *self._discover()})
        if filter:
            needle = filter.lower()
            found = {k: [n for n in v if needle in n.lower()] for k, v in groups.items()}
            if not any(found.values()):
                edits = len(needle) // 4
                found = {
                    k: [n for n in v if nearly_contains(n.lower(), needle, edits)]
                    for k, v in groups.items()
                }
            groups = found
        return groups

    # -- internals ----------------------------------------------------------------------------

    def _discover(self) -> dict[str, EntryPoint]:
        if self._entry_points is None:
            found: dict[str, EntryPoint] = {}
            if self._entry_point_group is not None:
                for ep in entry_points(group=self._entry_point_group):
                    other = found.get(ep.name)
                    # The same distribution can be visible twice on sys.path; that is no clash.
                    if other is not None and other.value != ep.value:
                        raise DuplicateModelError(
                            f"model {ep.name!r} is declared by two entry points in group "
                            f"{self._entry_point_group!r}: {other.value!r} and {ep.value!r}; "
                            "rename one of them"
                        )
                    found[ep.name] = ep
            self._entry_points = found
            for ep_name, ep in found.items():
                if ep_name in self._registered:
                    self._check_entry_point_clash(ep_name, ep)
        return self._entry_points

    def _check_entry_point_clash(self, name: str, ep: EntryPoint) -> None:
        # A plugin may both decorate its factory and declare it as an entry point: same object.
        target = ep.load()
        if target is not self._registered[name].builder:
            raise DuplicateModelError(
                f"model {name!r} is registered twice: by register_model on "
                f"{_describe(self._registered[name].builder)} and by entry point {ep.value!r} "
                f"(group {self._entry_point_group!r}); rename one of them"
            )

    def _load_entry_point(self, name: str) -> ModelSpec:
        if name in self._loaded:
            return self._loaded[name]
        ep = self._discover()[name]
        try:
            target = ep.load()
        except Exception as exc:
            raise ModelNotFoundError(
                f"model {name!r}: entry point {ep.value!r} (group {self._entry_point_group!r}) "
                f"failed to load: {type(exc).__name__}: {exc}"
            ) from exc
        if name in self._registered and self._registered[name].builder is target:
            return self._registered[name]  # loading it ran its @register_model
        if isinstance(target, ModelSpec):
            spec = ModelSpec(
                name=name,
                source="registered",
                builder=target.builder,
                default_input_shape=target.default_input_shape,
                input_kind=target.input_kind,
                group=REGISTERED_GROUP,
                default_arch_kwargs=target.default_arch_kwargs,
                shape_kwargs=target.shape_kwargs,
                vocab_size=target.vocab_size,
                built_inputs=target.built_inputs,
                image_tokens=target.image_tokens,
            )
        elif callable(target):
            spec = ModelSpec(name=name, source="registered", builder=target, group=REGISTERED_GROUP)
        else:
            raise ModelNotFoundError(
                f"model {name!r}: entry point {ep.value!r} loads a {type(target).__name__}; it "
                "must load a factory returning an nn.Module, an nn.Module class, or a ModelSpec"
            )
        self._loaded[name] = spec
        return spec

    def _check_new_name(self, name: str, *, origin: str) -> None:
        if not isinstance(name, str) or not name.strip() or name != name.strip():
            raise DuplicateModelError(
                f"{origin}: the name must be a non-empty string without padding"
            )
        if name.startswith((TIMM_PREFIX, HF_PREFIX)):
            raise DuplicateModelError(
                f"{origin}: the prefixes {TIMM_PREFIX!r} and {HF_PREFIX!r} are reserved for timm "
                "and Hugging Face models; pick a name without them"
            )
        if name in self._registered:
            raise DuplicateModelError(
                f"{origin}: {name!r} is already registered (by "
                f"{_describe(self._registered[name].builder)}); pick another name or "
                "unregister it first"
            )
        if name in self._discover():
            raise DuplicateModelError(
                f"{origin}: {name!r} is already declared by entry point "
                f"{self._discover()[name].value!r}; pick another name"
            )
        builtin = _builtin_source(name)
        if builtin is not None:
            raise DuplicateModelError(
                f"{origin}: {name!r} would shadow the {builtin} model of that name; "
                "pick another name"
            )

    def _not_found(self, name: str) -> ModelNotFoundError:
        candidates = [n for names in self.list_models().values() for n in names]
        by_lower = {n.lower(): n for n in candidates}
        # A bare hub name ("convnext_tiny") is matched against the names without their prefix.
        bare: dict[str, str] = {}
        for n in candidates:
            if n.startswith((TIMM_PREFIX, HF_PREFIX)):
                bare.setdefault(n.split(":", 1)[1].lower(), n)
        exact = [bare[name.lower()]] if name.lower() in bare else []
        close = exact + [
            by_lower[c]
            for c in close_matches(name.lower(), by_lower, n=5)
            if by_lower[c] not in exact
        ]
        if len(close) < 5:
            close += [
                bare[c]
                for c in close_matches(name.lower(), bare, n=5 - len(close))
                if bare[c] not in close
            ]
        hint = suggestion(close)
        stem = re.match(r"[a-z]+", name.lower())
        needle = stem.group(0) if stem else name
        extra = ""
        if is_yaml_name(name):
            extra = " (ultralytics YAML: a bundled config name or a path to a .yaml file)"
        return ModelNotFoundError(
            f"unknown model {name!r}{extra}{hint or '.'} Run `modelprof list --filter {needle}` to "
            "browse names; your own models resolve as 'package.module:factory' or via "
            "@register_model."
        )


def nearly_contains(text: str, needle: str, edits: int) -> bool:
    """Whether some part of ``text`` is ``needle`` but for at most ``edits`` insertions,
    deletions or substitutions (Sellers' approximate substring match)."""
    if edits <= 0 or len(needle) - edits > len(text):
        return needle in text
    previous = [0] * (len(text) + 1)  # a match may start anywhere in text
    for i, want in enumerate(needle, 1):
        current = [i] + [0] * len(text)
        for j, have in enumerate(text, 1):
            current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (want != have))
        previous = current
    return min(previous) <= edits


def _source_spec(name: str) -> ModelSpec | None:
    """The spec of a name that a model source recognises by its form, else ``None``."""
    # Before import paths: "timm:resnet50" also has the "module:attribute" form.
    if is_timm_name(name):
        return timm_spec(name)
    if is_hf_name(name):
        return hf_spec(name)
    if is_import_path(name):
        return import_spec(name)
    if is_checkpoint_name(name):
        return checkpoint_spec(name)
    if is_yaml_name(name):
        return ultralytics_spec(name)
    return torchvision_spec(name)


def _builtin_source(name: str) -> str | None:
    if is_yaml_name(name):
        return "ultralytics" if name in ultralytics_names() else None
    if any(name in names for names in torchvision_names().values()):
        return "torchvision"
    return None


def _describe(obj: object) -> str:
    module = getattr(obj, "__module__", None) or "?"
    qualname = getattr(obj, "__qualname__", None) or type(obj).__name__
    return f"{module}.{qualname}"


default_registry: Final = Registry()
"""The process-wide registry behind ``resolve``, ``list_models`` and ``register_model``."""
