"""timm as a model source: ``timm:NAME`` for any ``timm.list_models()`` name.

Models are built with ``pretrained=False`` (random weights, nothing downloaded) at the input size
of their ``pretrained_cfg``. A tagged name (``timm:resnet50.a1_in1k``) takes that tag's input
size. timm is an optional extra; it is imported only when a ``timm:`` name is resolved or listed.
"""

from __future__ import annotations

import functools
import importlib.util
import sys
from typing import TYPE_CHECKING, Any, Final

from pytest_modelprof.errors import ModelBuildError, ModelNotFoundError, close_matches, suggestion
from pytest_modelprof.models._names import timm_scan
from pytest_modelprof.models._spec import ModelSpec, Shape

if TYPE_CHECKING:
    from torch import nn

__all__ = ["PREFIX", "timm_names", "timm_spec", "is_timm_name"]

PREFIX: Final = "timm:"
INSTALL_HINT: Final = 'pip install "pytest-modelprof[timm]"'
# timm's own fallback when a model has no pretrained config.
_DEFAULT_SIZE: Final[tuple[int, int, int]] = (3, 224, 224)


def is_timm_name(name: str) -> bool:
    """Whether ``name`` asks for a timm model (``timm:...``)."""
    return name.startswith(PREFIX)


def timm_available() -> bool:
    """Whether the optional ``timm`` package is installed (without importing it)."""
    return importlib.util.find_spec("timm") is not None


def _scan() -> tuple[tuple[str, ...], tuple[str, ...]] | None:
    """timm's names read from its sources (seconds saved), unless timm is imported already:
    then its registry is as cheap and also holds the models a user registered with it."""
    return None if "timm" in sys.modules else timm_scan()


@functools.cache
def _names() -> tuple[str, ...]:
    scanned = _scan()
    if scanned is not None:
        return scanned[0]
    import timm

    return tuple(sorted(timm.list_models()))


def _is_model(arch: str) -> bool:
    """Whether timm builds ``arch`` (a deprecated alias too)."""
    scanned = _scan()
    if scanned is not None:
        return arch in scanned[1]
    import timm

    return bool(timm.is_model(arch))


def timm_names() -> tuple[str, ...]:
    """Every ``timm.list_models()`` name with the ``timm:`` prefix; empty without timm."""
    if not timm_available():
        return ()
    return tuple(PREFIX + n for n in _names())


def timm_spec(name: str) -> ModelSpec:
    """The spec of ``timm:ARCH`` or ``timm:ARCH.TAG``; raises with close matches if unknown."""
    bare = name[len(PREFIX) :]
    if not timm_available():
        raise ModelNotFoundError(
            f"model {name!r} is a timm model, but timm is not installed; install the extra: "
            f"{INSTALL_HINT}"
        )
    arch, _, tag = bare.partition(".")
    if not bare or not _is_model(arch):
        close = close_matches(arch.lower(), _names(), n=5)
        hint = suggestion(PREFIX + c for c in close)
        raise ModelNotFoundError(
            f"unknown timm model {name!r}{hint or '.'} Run `modelprof list --filter "
            f"timm:{arch[:6]}` to browse timm's names."
        )
    import timm

    if tag and bare not in timm.list_pretrained(f"{arch}.*"):
        tags = [t.partition(".")[2] for t in timm.list_pretrained(f"{arch}.*")]
        raise ModelNotFoundError(
            f"timm model {arch!r} has no pretrained config tagged {tag!r}; its tags are: "
            f"{', '.join(tags) or 'none'} (or use {PREFIX + arch!r})"
        )
    channels, height, width = _input_size(bare)
    return ModelSpec(
        name=name,
        source="timm",
        builder=functools.partial(_build, bare),
        default_input_shape=(1, channels, height, width),
        group="timm",
        shape_kwargs=functools.partial(_shape_kwargs, bare),
    )


def _pretrained_cfg(bare: str) -> Any:
    import timm

    # An untagged name resolves to timm's default tag for that architecture.
    return timm.models.get_pretrained_cfg(bare)


def _input_size(bare: str) -> tuple[int, int, int]:
    cfg = _pretrained_cfg(bare)
    size = getattr(cfg, "input_size", None) if cfg is not None else None
    if not size or len(size) != 3:
        return _DEFAULT_SIZE
    return int(size[0]), int(size[1]), int(size[2])


def _shape_kwargs(bare: str, shape: Shape) -> dict[str, Any]:
    """Builder kwargs an input shape implies: channels, and the size of fixed-size models."""
    if len(shape) != 4:
        return {}
    channels, height, width = _input_size(bare)
    out: dict[str, Any] = {}
    if shape[1] != channels:
        out["in_chans"] = shape[1]
    cfg = _pretrained_cfg(bare)
    # Position embeddings and attention windows are sized at construction (ViT, Swin, ...).
    if getattr(cfg, "fixed_input_size", False) and (shape[2], shape[3]) != (height, width):
        out["img_size"] = (shape[2], shape[3])
    return out


def _build(bare: str, **kwargs: Any) -> nn.Module:
    import timm

    for key in ("pretrained", "checkpoint_path", "pretrained_cfg_overlay"):
        if kwargs.get(key):
            raise ModelBuildError(
                f"timm model {bare!r}: {key}={kwargs[key]!r} would load weights; "
                "pytest-modelprof builds timm models with random weights and never downloads. "
                "Profile your own loaded module instead: profile_model(module, input_shape=...)"
            )
    return timm.create_model(bare, pretrained=False, **kwargs)
