"""Hugging Face transformers as a model source: ``hf:ARCH`` and ``hf:LOCAL_FOLDER``.

``hf:gpt2``, ``hf:bert``, ``hf:llama`` … build the architecture from its config class with the
config's defaults (random init; on meta when the engine builds there); ``hf:./my-model`` reads
the ``config.json`` of a local folder. Nothing is ever downloaded: a Hub id fails at once, and
``HF_HUB_OFFLINE=1`` is set before transformers is first imported. Builder keyword arguments
(``--arch KEY=VALUE``) override config fields; ``hf_class=BertForMaskedLM`` picks another head.

The overrides are constructor arguments of the config class (``_hf_config``), so derived fields
follow them. Which class a name builds and the inputs each kind gets: ``_hf_inputs``. The built
model's own config decides the inputs (vocabulary, positions, image size, mel bins), so
``--arch vocab_size=1000`` draws ids below 1000.
"""

from __future__ import annotations

import functools
import importlib.util
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from pytest_modelprof.errors import (
    ModelBuildError,
    ModelNotFoundError,
    clause,
    close_matches,
    suggestion,
)
from pytest_modelprof.models._hf_config import build_config
from pytest_modelprof.models._hf_inputs import (
    CLASS_KEY,
    DEFAULT_SEQ_LEN,
    built_inputs,
    default_class,
    head_note,
    image_tokens,
    inputs_for,
    load_class,
    placeholder_default,
    shape_kwargs,
    sub_field,
)
from pytest_modelprof.models._names import hf_scan
from pytest_modelprof.models._spec import BUILD_NOTE, ModelSpec

if TYPE_CHECKING:
    from torch import nn

__all__ = [
    "PREFIX",
    "DEFAULT_SEQ_LEN",
    "hf_names",
    "hf_spec",
    "is_hf_name",
]

PREFIX: Final = "hf:"
_CLASS_FIELDS: Final = ("image_token_index", "image_token_id")
"""Config fields that change which class a name builds (see ``default_class``)."""
INSTALL_HINT: Final = 'pip install "pytest-modelprof[hf]"'


def is_hf_name(name: str) -> bool:
    """Whether ``name`` asks for a Hugging Face model (``hf:...``)."""
    return name.startswith(PREFIX)


def hf_available() -> bool:
    """Whether the optional ``transformers`` package is installed (without importing it)."""
    return importlib.util.find_spec("transformers") is not None


def _offline() -> None:
    # NB: huggingface_hub reads these when it is first imported; setdefault keeps a user's choice
    # for other code, and we never call a download API anyway (configs come from config classes
    # or a local file).
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


def _auto() -> Any:
    _offline()
    from transformers.models.auto import modeling_auto

    return modeling_auto


@functools.cache
def _model_types() -> tuple[str, ...]:
    """Every model type with a base model class (``MODEL_MAPPING_NAMES``), sorted; read from
    transformers' source where it is a file (no import: seconds saved on a misspelled name)."""
    return hf_scan() or tuple(sorted(_auto().MODEL_MAPPING_NAMES))


def hf_names() -> tuple[str, ...]:
    """``hf:`` + every transformers model type that has a model class; empty without it."""
    if not hf_available():
        return ()
    return tuple(PREFIX + t for t in _model_types())


def hf_spec(name: str) -> ModelSpec:
    """The spec of ``hf:ARCH`` or ``hf:FOLDER``; raises at once for anything needing a download."""
    bare = name[len(PREFIX) :].strip()
    if not hf_available():
        raise ModelNotFoundError(
            f"model {name!r} is a Hugging Face transformers model, but transformers is not "
            f"installed; install the extra: {INSTALL_HINT}"
        )
    folder = Path(bare).expanduser()
    if bare and folder.is_dir():
        raw: dict[str, Any] | None = _local_config(name, folder)
        source = f"config.json in {folder}"
    elif bare in _model_types():
        raw = None
        source = f"the default {bare} config"
    else:
        raise _unknown(name, bare)
    model_type = str(raw["model_type"]) if raw is not None else bare
    base = _base_config(name, bare, raw)
    defaults = placeholder_default(model_type, base)
    if defaults:
        base = _base_config(name, bare, raw, defaults)
    cls_name, _ = default_class(model_type, base, raw is not None)
    kind, shape = inputs_for(cls_name, base)
    sized = sub_field(base, "image_size") is not None
    return ModelSpec(
        name=name,
        source="hf",
        builder=functools.partial(_build, name, bare, raw, source),
        default_input_shape=shape,
        input_kind=kind,
        group="hf",
        shape_kwargs=functools.partial(shape_kwargs, kind, shape, sized),
        vocab_size=_vocab_size(base),
        built_inputs=functools.partial(built_inputs, kind),
        image_tokens=image_tokens(base) if kind == "vision_language" else None,
    )


def _unknown(name: str, bare: str) -> ModelNotFoundError:
    if "/" in bare or "\\" in bare:
        return ModelNotFoundError(
            f"model {name!r}: no folder {bare!r} here, and pytest-modelprof never downloads "
            "from the Hugging Face Hub. Fetch only the config (`hf download ORG/NAME "
            "config.json --local-dir DIR`) and pass hf:DIR, or name an architecture such as "
            "hf:llama and set its sizes with --arch (e.g. --arch num_hidden_layers=16)."
        )
    types = _model_types()
    close = close_matches(bare.lower(), types, n=5, cutoff=0.5)
    stem = bare.lower().split("-")[0].split("_")[0]
    close += [t for t in types if stem and t.startswith(stem) and t not in close][: 5 - len(close)]
    hint = suggestion(PREFIX + c for c in close)
    return ModelNotFoundError(
        f"unknown Hugging Face architecture {name!r}{hint or '.'} hf: takes a transformers "
        "model type (`modelprof list --filter hf:`) or a local folder holding a config.json; "
        "checkpoint names such as 'gpt2-medium' are Hub ids and are never downloaded: use the "
        "architecture and --arch to set its sizes."
    )


def _local_config(name: str, folder: Path) -> dict[str, Any]:
    path = folder / "config.json"
    if not path.is_file():
        raise ModelNotFoundError(
            f"model {name!r}: folder {folder} has no config.json; point hf: at a folder "
            "holding the model's config.json"
        )
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ModelNotFoundError(f"model {name!r}: cannot read {path}: {exc}") from exc
    if not isinstance(raw, dict) or "model_type" not in raw:
        raise ModelNotFoundError(
            f"model {name!r}: {path} has no 'model_type' field; it is not a transformers config"
        )
    if raw.get("auto_map"):
        raise ModelNotFoundError(
            f"model {name!r}: {path} needs the model's own remote code (auto_map); "
            "pytest-modelprof does not run downloaded code. Import the model class yourself and "
            "profile the module: profile_model(module, inputs=...)"
        )
    if raw["model_type"] not in _model_types():
        raise ModelNotFoundError(
            f"model {name!r}: {path} has model_type {raw['model_type']!r}, which this "
            "transformers version does not know; upgrade transformers"
        )
    return raw


def _base_config(
    name: str, bare: str, raw: Mapping[str, Any] | None, fields: Mapping[str, Any] | None = None
) -> Any:
    """The config without overrides (the type's defaults, or the folder's ``config.json``);
    ``fields``: the few that decide the class (an image placeholder id)."""
    _offline()
    from transformers import AutoConfig
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING

    if raw is not None:
        return CONFIG_MAPPING[raw["model_type"]].from_dict({**raw, **(fields or {})})
    return AutoConfig.for_model(bare, **(fields or {}))


def _fields(kwargs: Mapping[str, Any]) -> str:
    return ", ".join(f"{k}={v!r}" for k, v in kwargs.items())


def _version() -> str:
    import transformers

    return str(transformers.__version__)


def _vocab_size(config: Any) -> int:
    vocab = sub_field(config, "vocab_size")
    return int(vocab) if isinstance(vocab, int) and vocab > 0 else 32_000


def _refuse_downloads(name: str, source: str, kwargs: Mapping[str, Any]) -> None:
    """Arguments that would fetch weights fail at once: nothing is ever downloaded."""
    for key in ("pretrained_model_name_or_path", "from_pretrained"):
        if key in kwargs:
            raise ModelBuildError(
                f"model {name!r}: {key} would download weights; pytest-modelprof builds "
                f"{source} with random weights and never downloads"
            )


def _build(
    name: str, bare: str, raw: Mapping[str, Any] | None, source: str, **kwargs: Any
) -> nn.Module:
    model_type = str(raw["model_type"]) if raw is not None else bare
    _refuse_downloads(name, source, kwargs)
    chosen = kwargs.pop(CLASS_KEY, None)
    others: tuple[str, ...]
    if chosen:
        cls_name, others = str(chosen), ()
    else:
        # An image placeholder id (BLIP-2's default, or the user's) makes it a generative model.
        chosen_by: dict[str, Any] = {k: kwargs[k] for k in _CLASS_FIELDS if k in kwargs}
        base = _base_config(name, bare, raw, chosen_by)
        if not chosen_by:
            base = _base_config(name, bare, raw, placeholder_default(model_type, base))
        cls_name, others = default_class(model_type, base, raw is not None)
    cls = load_class(name, cls_name, others)
    cfg = build_config(name, model_type, raw, kwargs, cls)
    fill = {} if chosen else placeholder_default(model_type, cfg)
    if fill:  # BLIP-2's placeholder: the last id of the text vocabulary as built
        cfg = build_config(name, model_type, raw, {**kwargs, **fill}, cls)
    try:
        module = cls.from_config(cfg) if hasattr(cls, "from_config") else cls(cfg)  # Auto class
    except Exception as exc:
        import torch

        if torch.get_default_device().type == "meta":
            raise  # the engine retries on the CPU: the constructor may read tensor values
        raise ModelBuildError(
            f"model {name!r}: transformers cannot build {cls_name} from {type(cfg).__name__}"
            f"({_fields(kwargs)}): {type(exc).__name__}: {clause(exc)}. This is the model's own "
            f"error (raised inside transformers {_version()}; building {cls_name} by hand from "
            "that config fails the same way), not pytest-modelprof's: try other --arch fields or "
            "another transformers version"
        ) from exc
    if others:
        # Say which of the mapping's classes this is; the capture reason carries it.
        setattr(
            module,
            BUILD_NOTE,
            (
                f"built {cls_name}, the first of {', '.join((cls_name, *others))} "
                f"({CLASS_KEY}= picks another)"
            ),
        )
    elif not chosen:
        note = head_note(model_type, cls_name)  # a task head, not the base model: say so
        if note is not None:
            setattr(module, BUILD_NOTE, note)
    return module  # type: ignore[no-any-return]
