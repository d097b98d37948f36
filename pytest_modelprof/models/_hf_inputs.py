"""Which transformers class ``hf:ARCH`` builds, and the inputs it gets by default.

Class: a local folder's ``config.architectures[0]``; otherwise generative vision-language
models whose config states their image placeholders their ``...ForConditionalGeneration``
(LLaVA, PaliGemma, BLIP-2), encoder-decoder language models theirs (T5, BART), decoder-only
language models their ``...ForCausalLM``, dual-tower models (a ``text_config`` and a
``vision_config``: CLIP, SigLIP) the whole model, SegFormer its semantic-segmentation head,
image classifiers their ``...ForImageClassification`` (ViT), detectors their
``...ForObjectDetection`` (DETR, YOLOS), everything else the base model (BERT, Whisper).
Where transformers maps a type to several classes (DeiT), the first is built and the capture
reason names it; ``hf_class=`` picks another.

Inputs by the class's ``main_input_name``: ``input_ids`` ``(1, 128)`` (plus
``decoder_input_ids`` for encoder-decoders); ``pixel_values`` at the config's ``image_size``
(512 for segmentation heads, 224 where the config has none); ``input_features``
``(1, num_mel_bins, 2 * max_source_positions)`` (Whisper: 30 s; Speech2Text: 3,000 frames of
``input_feat_per_channel``) plus ``decoder_input_ids``;
``input_values`` of one second at 16 kHz; dual towers ``pixel_values`` and ``input_ids``;
generative vision-language models ``pixel_values`` and ``input_ids`` that start with one image's
placeholder tokens (as many as the vision tower gives, measured on a meta twin), detectors
``pixel_values`` at the config's size or 800 x 800.
"""

from __future__ import annotations

from typing import Any, Final

from pytest_modelprof.errors import ModelBuildError, ModelInputError
from pytest_modelprof.models._inputs import TEXT_LEN
from pytest_modelprof.models._spec import SAMPLE_RATE, BuiltInputs, InputKind, Shape

__all__ = [
    "DEFAULT_SEQ_LEN",
    "CLASS_KEY",
    "default_class",
    "image_tokens",
    "placeholder_default",
    "head_note",
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
DETECTION_SIZE: Final = 800
"""Image side of a detection head whose config has no size: DETR's shortest edge."""
IMAGE_TOKEN_FIELDS: Final = ("image_seq_length", "num_image_tokens", "mm_tokens_per_image")
"""Config fields (top level or the text config) giving how many image tokens one image takes in
a generative vision-language model's ``input_ids``; BLIP-2 gives ``num_query_tokens``."""


def _auto() -> Any:
    from transformers.models.auto import modeling_auto

    return modeling_auto


def _candidates(value: Any) -> tuple[str, ...]:
    """An auto mapping's value as class names: one name, or a tuple of them (DeiT)."""
    if value is None:
        return ()
    return tuple(str(v) for v in value) if isinstance(value, (tuple, list)) else (str(value),)


def _saved_class(base: Any) -> str | None:
    """A saved folder's own class (its config's ``architectures``), where installed."""
    for arch in getattr(base, "architectures", None) or ():
        if _has_class(arch):
            return str(arch)
    return None


def default_class(model_type: str, base: Any, from_folder: bool) -> tuple[str, tuple[str, ...]]:
    """The class name built by default and the other classes its mapping offered."""
    auto = _auto()
    saved = _saved_class(base) if from_folder else None
    if saved is not None:
        return saved, ()

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
    # A generative vision-language model (LLaVA, PaliGemma) whose config says how its images
    # become tokens: its users mean the model that writes text, fed both.
    generative = tuple(
        c for c in get("MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING_NAMES") if _takes_image_and_text(c)
    )
    if generative and not encoder_decoder and image_tokens(base) is not None:
        return generative[0], generative[1:]
    if encoder_decoder and seq2seq:
        return seq2seq[0], seq2seq[1:]
    if causal and not masked and not encoder_decoder:
        return causal[0], causal[1:]
    if model_type in SEGMENTATION_FIRST and segmentation:
        return segmentation[0], segmentation[1:]
    if not dual and image and class_input(image[0]) == "pixel_values":
        return image[0], image[1:]
    # Detectors (DETR, YOLOS, RT-DETR): the detection head. (Mask2Former's and MaskFormer's
    # heads build their loss, which needs scipy, in the constructor: they stay opt-in.)
    detectors = get("MODEL_FOR_OBJECT_DETECTION_MAPPING_NAMES")
    detection = [c for c in detectors if class_input(c) == "pixel_values"]
    if detection:
        return detection[0], tuple(detection[1:])
    base_classes = _candidates(auto.MODEL_MAPPING_NAMES[model_type])
    return base_classes[0], base_classes[1:]


def _has_class(cls_name: str) -> bool:
    import transformers

    try:
        getattr(transformers, cls_name)
    except (AttributeError, ImportError):
        return False
    return True


def _takes_image_and_text(cls_name: str) -> bool:
    """Whether the forward needs nothing but ``pixel_values`` and ``input_ids`` (InstructBLIP
    also needs ``qformer_input_ids``: no default for it)."""
    import inspect

    import transformers

    params = inspect.signature(getattr(transformers, cls_name).forward).parameters.values()
    required = {
        p.name
        for p in params
        if p.default is inspect.Parameter.empty
        and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
    }
    return required <= {"self", "pixel_values", "input_ids"}


def placeholder_default(model_type: str, config: Any) -> dict[str, int]:
    """The image placeholder id a query-token model's config leaves unset, as a config field.

    BLIP-2's default config has 32 query tokens but no ``image_token_index``, so its language
    model would never see the image; the published checkpoints set one. By name it gets the
    last id of the text vocabulary (``--arch image_token_index=N`` sets another).
    """
    text = getattr(config, "text_config", None)
    vocab = getattr(text, "vocab_size", None)
    queries = getattr(config, "num_query_tokens", None)
    if getattr(config, "image_token_index", -1) is not None or not isinstance(vocab, int):
        return {}
    if not isinstance(queries, int) or queries <= 0:
        return {}
    generative = _candidates(_auto().MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING_NAMES.get(model_type))
    if not any(_has_class(c) and _takes_image_and_text(c) for c in generative):
        return {}
    return {"image_token_index": vocab - 1}


_TASK_HEADS: Final = {
    "MODEL_FOR_OBJECT_DETECTION_MAPPING_NAMES": "object-detection head",
    "MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING_NAMES": "image-text-to-text model",
}


def head_note(model_type: str, cls_name: str) -> str | None:
    """``"built DetrForObjectDetection, the object-detection head (hf_class=DetrModel ...)"``
    where the default is a task head rather than the base model; else ``None``."""
    auto = _auto()
    for table, what in _TASK_HEADS.items():
        if cls_name in _candidates(getattr(auto, table).get(model_type)):
            base = _candidates(auto.MODEL_MAPPING_NAMES.get(model_type))
            other = f" ({CLASS_KEY}={base[0]} builds the base model)" if base else ""
            return f"built {cls_name}, the {what}{other}"
    return None


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


def image_tokens(config: Any) -> tuple[int, int] | None:
    """``(token id, tokens per image)`` of a generative vision-language model's image
    placeholders in ``input_ids`` (LLaVA: 576 of id 32000), read from its config; else ``None``.

    Only fields that state the count are read (:data:`IMAGE_TOKEN_FIELDS`,
    ``num_query_tokens``): a count guessed from patch sizes is wrong for models that pool or
    tile, and on meta tensors nothing would say so.
    """
    if getattr(config, "vision_config", None) is None:
        return None
    token = getattr(config, "image_token_id", None)
    if token is None:
        token = getattr(config, "image_token_index", None)
    if not isinstance(token, int) or isinstance(token, bool):
        return None
    for cfg in (config, getattr(config, "text_config", None)):
        for key in (*IMAGE_TOKEN_FIELDS, "num_query_tokens"):
            count = getattr(cfg, key, None) if cfg is not None else None
            if isinstance(count, int) and not isinstance(count, bool) and count > 0:
                return token, count
    return None


def _kind(main: str, config: Any) -> InputKind:
    dual = all(getattr(config, k, None) is not None for k in ("text_config", "vision_config"))
    encoder_decoder = bool(getattr(config, "is_encoder_decoder", False))
    if main in ("input_ids", "pixel_values") and dual and image_tokens(config) is not None:
        return "vision_language"  # LLaVA, PaliGemma: image placeholders in the text
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
    return kind, _shape_of(kind, main, config, segmentation, "ObjectDetection" in cls_name)


def built_inputs(kind: InputKind, module: Any) -> BuiltInputs:
    """Vocabulary and default shape from the built model's own config (``--arch`` included)."""
    config = getattr(module, "config", None)
    if config is None:
        return BuiltInputs()
    main = str(getattr(module, "main_input_name", "input_ids"))
    segmentation = "Segmentation" in type(module).__name__
    detection = "ObjectDetection" in type(module).__name__
    vocab = sub_field(config, "vocab_size")
    if kind == "vision_language":
        # The language model's embedding reads the ids: PaliGemma's top-level vocab_size
        # keeps its default when text_config changes it.
        vocab = getattr(getattr(config, "text_config", None), "vocab_size", None) or vocab
    text_positions = _text_positions(config)
    shape = (
        _shape_of(kind, main, config, segmentation, detection)
        if _kind(main, config) == kind
        else None
    )
    return BuiltInputs(
        default_shape=shape,
        vocab_size=int(vocab) if isinstance(vocab, int) and vocab > 0 else None,
        text_len=min(TEXT_LEN, text_positions) if text_positions else None,
        image_tokens=_image_tokens_of(module, config, shape) if kind == "vision_language" else None,
    )


def _image_tokens_of(module: Any, config: Any, shape: Shape | None) -> tuple[int, int] | None:
    """The config's placeholder id with the count measured on the model, else the config's."""
    stated = image_tokens(config)
    if stated is None or shape is None:
        return stated
    measured = _measured_image_tokens(module, shape)
    return (stated[0], measured) if measured is not None else stated


def _measured_image_tokens(module: Any, shape: Shape) -> int | None:
    """How many features one image of ``shape`` becomes, run on a meta twin of the model.

    The config's count (``image_seq_length``) does not follow a changed vision tower (LLaVA
    with ``vision_config={...}`` gets CLIP's 224-pixel, 32-pixel-patch default: 49, not 576),
    and with the value checks off on meta nothing else would notice. ``None`` where the model
    has no ``get_image_features`` or it fails on meta (the capture reports the model's error).
    """
    import torch

    if not callable(getattr(module, "get_image_features", None)):
        return None
    try:
        with torch.device("meta"), torch.no_grad():
            params = list(module.parameters())
            on_meta = bool(params) and all(p.is_meta for p in params)
            twin = module if on_meta else type(module)(module.config).eval()
            dtype = next(twin.parameters()).dtype
            out = twin.get_image_features(pixel_values=torch.zeros(shape, dtype=dtype))
            width = int(twin.get_input_embeddings().embedding_dim)
    except Exception:  # the config's count stands; a real run checks it
        return None
    features = getattr(out, "pooler_output", out)
    if isinstance(features, torch.Tensor):
        tensors = [features]
    elif isinstance(features, (list, tuple)):
        tensors = [t for t in features if isinstance(t, torch.Tensor)]
    else:
        tensors = []
    tensors = [t for t in tensors if t.dim() >= 2]
    wrong = [t.shape[-1] for t in tensors if t.shape[-1] != width]
    if wrong:
        # On meta and fake tensors nothing else would notice: transformers checks it on real ones.
        raise ModelInputError(
            f"{type(module).__name__}: its image features are {wrong[0]} wide but its language "
            f"model's embeddings {width}, so transformers refuses any image ('Image features "
            "and image tokens do not match'); make the vision projection's width match "
            "text_config.hidden_size (e.g. projection_dim)"
        )
    count = sum(t.numel() // t.shape[-1] for t in tensors) // max(1, shape[0])
    return count if count > 0 else None


def _text_positions(config: Any) -> int | None:
    for key in ("max_target_positions", "max_position_embeddings"):
        value = sub_field(config, key)
        if isinstance(value, int) and value > 0:
            return value
    return None


def _shape_of(
    kind: InputKind, main: str, config: Any, segmentation: bool, detection: bool = False
) -> Shape | None:
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
        return _speech_shape(config)
    if main == "pixel_values" or kind in ("image_text", "vision_language"):
        return _image_shape(config, segmentation, detection)
    return None


def _speech_shape(config: Any) -> Shape | None:
    """Log-mel features: Whisper's (mel bins x frames) or Speech2Text's (frames x features)."""
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


def _image_shape(config: Any, segmentation: bool, detection: bool) -> Shape:
    """``pixel_values`` at the config's image size (else a task's usual size)."""
    size = sub_field(config, "image_size")
    channels = sub_field(config, "num_channels") or 3
    if isinstance(size, (list, tuple)):
        height, width = int(size[0]), int(size[-1])
    elif isinstance(size, int):
        height = width = size
    elif segmentation:
        height = width = SEGMENTATION_SIZE
    else:
        height = width = DETECTION_SIZE if detection else FALLBACK_IMAGE_SIZE
    return (1, int(channels), height, width)


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
