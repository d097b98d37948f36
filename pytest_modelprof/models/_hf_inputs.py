"""Which transformers class ``hf:ARCH`` builds, and the inputs it gets by default.

Class: a local folder's ``config.architectures[0]``; otherwise encoder-decoder language models
their ``...ForConditionalGeneration`` (T5, BART), decoder-only language models their
``...ForCausalLM``, dual-tower models (a ``text_config`` and a ``vision_config``: CLIP, SigLIP)
the whole model, SegFormer its semantic-segmentation head, image classifiers their
``...ForImageClassification`` (ViT), everything else the base model (BERT, Whisper, wav2vec2).
Where transformers maps a type to several classes (DeiT), the first is built and the capture
reason names it; ``hf_class=`` picks another.

Inputs by the class's ``main_input_name``: ``input_ids`` ``(1, 128)`` (plus
``decoder_input_ids`` for encoder-decoders); ``pixel_values`` at the config's ``image_size``
(512 for segmentation heads, 224 where the config has none); ``input_features``
``(1, num_mel_bins, 2 * max_source_positions)`` (Whisper: 30 s; Speech2Text: 3,000 frames of
``input_feat_per_channel``) plus ``decoder_input_ids``;
``input_values`` of one second at 16 kHz; dual towers ``pixel_values`` and ``input_ids``.
"""

from __future__ import annotations

from typing import Any, Final

from pytest_modelprof.errors import ModelBuildError
from pytest_modelprof.models._inputs import TEXT_LEN
from pytest_modelprof.models._spec import SAMPLE_RATE, BuiltInputs, InputKind, Shape

__all__ = [
    "DEFAULT_SEQ_LEN",
    "CLASS_KEY",
    "default_class",
    "load_class",
    "inputs_for",
    "built_inputs",
    "shape_kwargs",
    "sub_field",
]

DEFAULT_SEQ_LEN: Final = 128
"""Tokens per sequence of a text model's default input (batch 1), as calflops and DeepSpeed's
examples use; capped at the model's ``max_position_embeddings``."""
CLASS_KEY: Final = "hf_class"
"""Builder kwarg naming the transformers class to build instead of the default head."""
SEGMENTATION_FIRST: Final = frozenset({"segformer"})
"""Model types whose users mean the semantic-segmentation head, not the image classifier."""
SEGMENTATION_SIZE: Final = 512
FALLBACK_IMAGE_SIZE: Final = 224
SPEECH_FRAMES: Final = 3_000
"""Feature frames of a speech model whose config does not fix them: 30 s at a 10 ms hop."""


def _auto() -> Any:
    from transformers.models.auto import modeling_auto

    return modeling_auto


def _candidates(value: Any) -> tuple[str, ...]:
    """An auto mapping's value as class names: one name, or a tuple of them (DeiT)."""
    if value is None:
        return ()
    return tuple(str(v) for v in value) if isinstance(value, (tuple, list)) else (str(value),)


def default_class(model_type: str, base: Any, from_folder: bool) -> tuple[str, tuple[str, ...]]:
    """The class name built by default and the other classes its mapping offered."""
    auto = _auto()
    if from_folder:
        for arch in getattr(base, "architectures", None) or ():
            if _has_class(arch):
                return str(arch), ()

    def get(table: str) -> tuple[str, ...]:
        found = [c for c in _candidates(getattr(auto, table).get(model_type)) if _has_class(c)]
        return tuple(found)

    # Whisper is an encoder-decoder without a seq2seq LM class: it must not become a causal LM.
    encoder_decoder = bool(getattr(base, "is_encoder_decoder", False))
    seq2seq = get("MODEL_FOR_SEQ_TO_SEQ_CAUSAL_LM_MAPPING_NAMES")
    causal = get("MODEL_FOR_CAUSAL_LM_MAPPING_NAMES")
    masked = get("MODEL_FOR_MASKED_LM_MAPPING_NAMES")
    image = get("MODEL_FOR_IMAGE_CLASSIFICATION_MAPPING_NAMES")
    segmentation = get("MODEL_FOR_SEMANTIC_SEGMENTATION_MAPPING_NAMES")
    dual = all(getattr(base, k, None) is not None for k in ("text_config", "vision_config"))
    if encoder_decoder and seq2seq:
        return seq2seq[0], seq2seq[1:]
    if causal and not masked and not encoder_decoder:
        return causal[0], causal[1:]
    if model_type in SEGMENTATION_FIRST and segmentation:
        return segmentation[0], segmentation[1:]
    if not dual and image and class_input(image[0]) == "pixel_values":
        return image[0], image[1:]
    base_classes = _candidates(auto.MODEL_MAPPING_NAMES[model_type])
    return base_classes[0], base_classes[1:]


def _has_class(cls_name: str) -> bool:
    import transformers

    try:
        getattr(transformers, cls_name)
    except (AttributeError, ImportError):
        return False
    return True


def load_class(name: str, cls_name: str, tried: tuple[str, ...] = ()) -> Any:
    """The transformers class ``cls_name``; a :class:`ModelBuildError` naming what was tried."""
    import transformers

    try:
        return getattr(transformers, cls_name)
    except (AttributeError, ImportError) as exc:
        classes = ", ".join(repr(c) for c in (cls_name, *tried))
        raise ModelBuildError(
            f"model {name!r}: transformers has no class {classes} ({exc}); pass an existing "
            f"one, e.g. --arch {CLASS_KEY}=AutoModel"
        ) from exc


def class_input(cls_name: str) -> str:
    """The class's ``main_input_name`` (``input_ids`` when it names none)."""
    import transformers

    return str(getattr(getattr(transformers, cls_name), "main_input_name", "input_ids"))


def sub_field(config: Any, key: str) -> Any:
    """``config.key``, else the same field of its text or vision sub-config."""
    subs = (getattr(config, "text_config", None), getattr(config, "vision_config", None))
    for cfg in (config, *subs):
        value = getattr(cfg, key, None) if cfg is not None else None
        if value is not None:
            return value
    return None


def _kind(main: str, config: Any) -> InputKind:
    dual = all(getattr(config, k, None) is not None for k in ("text_config", "vision_config"))
    encoder_decoder = bool(getattr(config, "is_encoder_decoder", False))
    if main == "input_ids":
        if dual:
            return "image_text"  # CLIP, SigLIP: both towers get their input
        return "seq2seq_ids" if encoder_decoder else "input_ids"
    if main == "input_features":
        return "speech_seq2seq" if encoder_decoder else "input_features"
    if main == "input_values":
        return "input_values"
    return "tensor"


def inputs_for(cls_name: str, config: Any) -> tuple[InputKind, Shape | None]:
    """The input kind and default shape of class ``cls_name`` under ``config``."""
    main = class_input(cls_name)
    segmentation = "Segmentation" in cls_name
    kind = _kind(main, config)
    return kind, _shape_of(kind, main, config, segmentation)


def built_inputs(kind: InputKind, module: Any) -> BuiltInputs:
    """Vocabulary and default shape from the built model's own config (``--arch`` included)."""
    config = getattr(module, "config", None)
    if config is None:
        return BuiltInputs()
    main = str(getattr(module, "main_input_name", "input_ids"))
    segmentation = "Segmentation" in type(module).__name__
    vocab = sub_field(config, "vocab_size")
    text_positions = _text_positions(config)
    return BuiltInputs(
        default_shape=(
            _shape_of(kind, main, config, segmentation) if _kind(main, config) == kind else None
        ),
        vocab_size=int(vocab) if isinstance(vocab, int) and vocab > 0 else None,
        text_len=min(TEXT_LEN, text_positions) if text_positions else None,
    )


def _text_positions(config: Any) -> int | None:
    for key in ("max_target_positions", "max_position_embeddings"):
        value = sub_field(config, key)
        if isinstance(value, int) and value > 0:
            return value
    return None


def _shape_of(kind: InputKind, main: str, config: Any, segmentation: bool) -> Shape | None:
    """The default shape of a model's main input under ``config``; ``None``: no default."""
    if kind in ("input_ids", "seq2seq_ids"):
        limit = sub_field(config, "max_position_embeddings")
        seq = DEFAULT_SEQ_LEN
        if isinstance(limit, int) and 0 < limit < seq:
            seq = limit
        return (1, seq)
    if kind == "input_values":
        return (1, SAMPLE_RATE)
    if kind in ("input_features", "speech_seq2seq"):
        mel = getattr(config, "num_mel_bins", None)
        positions = getattr(config, "max_source_positions", None)
        if isinstance(mel, int) and isinstance(positions, int):
            # Whisper's encoder halves the frames with a stride-2 convolution and checks them.
            return (1, mel, 2 * positions)
        per_channel = getattr(config, "input_feat_per_channel", None)
        if isinstance(per_channel, int):
            # Speech2Text: frames first, 30 s at a 10 ms hop.
            return (1, SPEECH_FRAMES, per_channel * int(getattr(config, "input_channels", 1)))
        return None
    if main == "pixel_values" or kind == "image_text":
        size = sub_field(config, "image_size")
        channels = sub_field(config, "num_channels") or 3
        if isinstance(size, (list, tuple)):
            height, width = int(size[0]), int(size[-1])
        elif isinstance(size, int):
            height = width = size
        else:
            height = width = SEGMENTATION_SIZE if segmentation else FALLBACK_IMAGE_SIZE
        return (1, int(channels), height, width)
    return None


def shape_kwargs(
    kind: InputKind, default: Shape | None, sized: bool, shape: Shape
) -> dict[str, Any]:
    """Config fields an input shape implies: a vision model's ``image_size`` (if it has one)."""
    if sized and kind == "tensor" and default is not None and len(shape) == 4 and shape != default:
        out: dict[str, Any] = {}
        if shape[2:] != default[2:]:
            out["image_size"] = shape[2] if shape[2] == shape[3] else (shape[2], shape[3])
        if shape[1] != default[1]:
            out["num_channels"] = shape[1]
        return out
    return {}
