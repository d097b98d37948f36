"""Hugging Face transformers as a model source: ``hf:ARCH`` and ``hf:LOCAL_FOLDER``.

``hf:gpt2``, ``hf:bert``, ``hf:llama`` … build the architecture from its config class with the
config's defaults (random init; on meta when the engine builds there); ``hf:./my-model`` reads
the ``config.json`` of a local folder. Nothing is ever downloaded: a Hub id fails at once, and
``HF_HUB_OFFLINE=1`` is set before transformers is first imported. Builder keyword arguments
(``--arch KEY=VALUE``) override config fields; ``hf_class=BertForMaskedLM`` picks another head.

Which class a name builds: encoder-decoder language models their ``...ForConditionalGeneration``
(T5, BART), decoder-only language models their ``...ForCausalLM`` (GPT-2, LLaMA, Mixtral),
image classifiers their ``...ForImageClassification`` (ViT), everything else the base model
(BERT: ``BertModel``). A local folder builds ``config.architectures[0]``.

Text models take ``input_ids`` of shape ``(1, DEFAULT_SEQ_LEN)`` (``--seq-len`` or
``input_shape=(batch, seq_len)`` changes it); encoder-decoder models also get
``decoder_input_ids`` of the same shape; vision models ``pixel_values`` at the config's
``image_size``. The built model's own config decides (vocabulary, positions, image size,
channels), so ``--arch vocab_size=1000`` draws ids below 1000.
"""

from __future__ import annotations

import difflib
import functools
import importlib.util
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from pytest_modelprof.errors import ModelBuildError, ModelNotFoundError
from pytest_modelprof.models._spec import BuiltInputs, InputKind, ModelSpec, Shape

if TYPE_CHECKING:
    from torch import nn

__all__ = [
    "PREFIX",
    "INSTALL_HINT",
    "DEFAULT_SEQ_LEN",
    "hf_available",
    "hf_names",
    "hf_spec",
    "is_hf_name",
]

PREFIX: Final = "hf:"
INSTALL_HINT: Final = 'pip install "pytest-modelprof[hf]"'
DEFAULT_SEQ_LEN: Final = 128
"""Tokens per sequence of a text model's default input (batch 1), as calflops and DeepSpeed's
examples use; capped at the model's ``max_position_embeddings``."""
CLASS_KEY: Final = "hf_class"
"""Builder kwarg naming the transformers class to build instead of the default head."""


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
    """Every model type with a base model class (``MODEL_MAPPING_NAMES``), sorted."""
    return tuple(sorted(_auto().MODEL_MAPPING_NAMES))


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
        config = _local_config(name, folder)
        source = f"config.json in {folder}"
    elif bare in _model_types():
        config = None
        source = f"the default {bare} config"
    else:
        raise _unknown(name, bare)
    model_type = config.model_type if config is not None else bare
    base = _base_config(name, bare, config)
    cls_name = _default_class(model_type, base, config is not None)
    kind, shape = _inputs_for(name, cls_name, base)
    return ModelSpec(
        name=name,
        source="hf",
        builder=functools.partial(_build, name, bare, config, source),
        default_input_shape=shape,
        input_kind=kind,
        group="hf",
        shape_kwargs=functools.partial(_shape_kwargs, kind, shape),
        vocab_size=_vocab_size(base),
        built_inputs=functools.partial(_built_inputs, kind),
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
    close = difflib.get_close_matches(bare.lower(), types, n=5, cutoff=0.5)
    stem = bare.lower().split("-")[0].split("_")[0]
    close += [t for t in types if stem and t.startswith(stem) and t not in close][: 5 - len(close)]
    hint = f" Did you mean: {', '.join(PREFIX + c for c in close)}?" if close else ""
    return ModelNotFoundError(
        f"unknown Hugging Face architecture {name!r}.{hint} hf: takes a transformers model type "
        "(`modelprof list --filter hf:`) or a local folder holding a config.json; checkpoint "
        "names such as 'gpt2-medium' are Hub ids and are never downloaded: use the "
        "architecture and --arch to set its sizes."
    )


def _local_config(name: str, folder: Path) -> Any:
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
    _offline()
    from transformers import AutoConfig

    return AutoConfig.from_pretrained(str(folder), local_files_only=True)


def _base_config(name: str, bare: str, config: Any) -> Any:
    if config is not None:
        return config
    _offline()
    from transformers import AutoConfig

    return AutoConfig.for_model(bare)


def _default_class(model_type: str, base: Any, from_folder: bool) -> str:
    """The class name built by default (see the module docstring)."""
    auto = _auto()
    if from_folder:
        for arch in getattr(base, "architectures", None) or ():
            if _has_class(arch):
                return str(arch)
    # Whisper is an encoder-decoder without a seq2seq LM class: it must not become a causal LM.
    encoder_decoder = bool(getattr(base, "is_encoder_decoder", False))
    seq2seq = auto.MODEL_FOR_SEQ_TO_SEQ_CAUSAL_LM_MAPPING_NAMES.get(model_type)
    causal = auto.MODEL_FOR_CAUSAL_LM_MAPPING_NAMES.get(model_type)
    masked = auto.MODEL_FOR_MASKED_LM_MAPPING_NAMES.get(model_type)
    image = auto.MODEL_FOR_IMAGE_CLASSIFICATION_MAPPING_NAMES.get(model_type)
    if encoder_decoder and seq2seq:
        return str(seq2seq)
    if causal and not masked and not encoder_decoder:
        return str(causal)
    if image and _class_input(str(image)) == "pixel_values":
        return str(image)
    return str(auto.MODEL_MAPPING_NAMES[model_type])


def _has_class(cls_name: str) -> bool:
    import transformers

    try:
        getattr(transformers, cls_name)
    except (AttributeError, ImportError):
        return False
    return True


def _load_class(name: str, cls_name: str) -> Any:
    import transformers

    try:
        return getattr(transformers, cls_name)
    except (AttributeError, ImportError) as exc:
        raise ModelBuildError(
            f"model {name!r}: transformers has no class {cls_name!r} ({exc}); pass an existing "
            f"one, e.g. --arch {CLASS_KEY}=AutoModel"
        ) from exc


def _class_input(cls_name: str) -> str:
    import transformers

    return str(getattr(getattr(transformers, cls_name), "main_input_name", "input_ids"))


def _sub(config: Any, key: str) -> Any:
    """``config.key``, else the same field of its text or vision sub-config."""
    subs = (getattr(config, "text_config", None), getattr(config, "vision_config", None))
    for cfg in (config, *subs):
        value = getattr(cfg, key, None) if cfg is not None else None
        if value is not None:
            return value
    return None


def _vocab_size(config: Any) -> int:
    vocab = _sub(config, "vocab_size")
    return int(vocab) if isinstance(vocab, int) and vocab > 0 else 32_000


def _inputs_for(name: str, cls_name: str, config: Any) -> tuple[InputKind, Shape | None]:
    main = _class_input(cls_name)
    if main == "input_ids":
        encoder_decoder = bool(getattr(config, "is_encoder_decoder", False))
        kind: InputKind = "seq2seq_ids" if encoder_decoder else "input_ids"
        return kind, _shape_of(main, config)
    return "tensor", _shape_of(main, config)


def _built_inputs(kind: InputKind, module: Any) -> BuiltInputs:
    """Vocabulary and default shape from the built model's own config (``--arch`` included)."""
    config = getattr(module, "config", None)
    if config is None:
        return BuiltInputs()
    main = str(getattr(module, "main_input_name", "input_ids"))
    expected = "pixel_values" if kind == "tensor" else "input_ids"
    vocab = _sub(config, "vocab_size")
    return BuiltInputs(
        default_shape=_shape_of(main, config) if main == expected else None,
        vocab_size=int(vocab) if isinstance(vocab, int) and vocab > 0 else None,
    )


def _shape_of(main: str, config: Any) -> Shape | None:
    """The default shape of a model's main input under ``config``; ``None``: no default."""
    if main == "input_ids":
        limit = _sub(config, "max_position_embeddings")
        seq = DEFAULT_SEQ_LEN
        if isinstance(limit, int) and 0 < limit < seq:
            seq = limit
        return (1, seq)
    if main == "pixel_values":
        size = _sub(config, "image_size")
        channels = _sub(config, "num_channels") or 3
        if isinstance(size, (list, tuple)):
            height, width = int(size[0]), int(size[-1])
        elif isinstance(size, int):
            height = width = size
        else:
            return None
        return (1, int(channels), height, width)
    # Audio and other inputs: no default; example_inputs asks for input_shape / inputs.
    return None


def _shape_kwargs(kind: InputKind, default: Shape | None, shape: Shape) -> dict[str, Any]:
    """Config fields an input shape implies: a vision model's ``image_size``."""
    if kind == "tensor" and default is not None and len(shape) == 4 and shape != default:
        out: dict[str, Any] = {}
        if shape[2:] != default[2:]:
            out["image_size"] = shape[2] if shape[2] == shape[3] else (shape[2], shape[3])
        if shape[1] != default[1]:
            out["num_channels"] = shape[1]
        return out
    return {}


def _apply_overrides(name: str, config: Any, overrides: Mapping[str, Any]) -> Any:
    """A copy of ``config`` with ``overrides`` set; an unknown field fails with close matches."""
    import copy

    known = set(config.to_dict()) | set(getattr(config, "attribute_map", {}))
    unknown = [k for k in overrides if k not in known and not hasattr(config, k)]
    if unknown:
        key = unknown[0]
        close = difflib.get_close_matches(key, sorted(known), n=5)
        hint = f"; did you mean: {', '.join(close)}?" if close else ""
        raise ModelBuildError(
            f"model {name!r}: {type(config).__name__} has no field {key!r}{hint} "
            f"(--arch KEY=VALUE sets config fields; {CLASS_KEY}=CLASS picks the model class)"
        )
    new = copy.deepcopy(config)
    for key, value in overrides.items():
        setattr(new, key, value)
    return new


def _build(name: str, bare: str, config: Any, source: str, **kwargs: Any) -> nn.Module:
    base = _base_config(name, bare, config)
    cls_name = str(
        kwargs.pop(CLASS_KEY, None) or _default_class(base.model_type, base, config is not None)
    )
    for key in ("pretrained_model_name_or_path", "from_pretrained"):
        if key in kwargs:
            raise ModelBuildError(
                f"model {name!r}: {key} would download weights; pytest-modelprof builds "
                f"{source} with random weights and never downloads"
            )
    cfg = _apply_overrides(name, base, kwargs)
    cls = _load_class(name, cls_name)
    if hasattr(cls, "from_config"):  # an Auto class
        return cls.from_config(cfg)  # type: ignore[no-any-return]
    return cls(cfg)  # type: ignore[no-any-return]
