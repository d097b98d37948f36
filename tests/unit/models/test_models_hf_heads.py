"""``hf:NAME`` builds the model its users mean where transformers has a task head.

Detectors (DETR, YOLOS) get their object-detection head; generative vision-language models
(LLaVA, PaliGemma, BLIP-2) the model that writes text, fed ``pixel_values`` and ``input_ids``
that start with one image's placeholder tokens. The references are the same classes built by
hand from a config with the same fields, run on real CPU tensors, where transformers itself
checks that the placeholders match the image features.
"""

from __future__ import annotations

import os
from typing import Any

import pytest
import torch

from pytest_modelprof.capture.kernels import TRANSFORMERS_CHECKS_VARIABLE, value_checks_off
from pytest_modelprof.errors import ModelInputError
from pytest_modelprof.models import resolve
from pytest_modelprof.profile import canonical_kernels, profile_model

transformers = pytest.importorskip("transformers")

# A 56-pixel image in 14-pixel patches: 16 patches. Two layers everywhere, narrow widths.
_VISION = {
    "num_hidden_layers": 2,
    "hidden_size": 32,
    "intermediate_size": 64,
    "num_attention_heads": 2,
    "image_size": 56,
    "patch_size": 14,
}
_LLAMA = {
    "num_hidden_layers": 2,
    "hidden_size": 64,
    "intermediate_size": 128,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "vocab_size": 1000,
}
_OPT = {
    "num_hidden_layers": 2,
    "hidden_size": 64,
    "ffn_dim": 128,
    "num_attention_heads": 4,
    "vocab_size": 1000,
    "word_embed_proj_dim": 64,
}
_QFORMER = {
    "num_hidden_layers": 2,
    "hidden_size": 32,
    "intermediate_size": 64,
    "num_attention_heads": 2,
    "encoder_hidden_size": 32,
}

# arch: (class, fields by name, fields the hand-built config adds, placeholder id, count)
VISION_LANGUAGE: dict[str, tuple[str, dict[str, Any], dict[str, Any], int, int]] = {
    # LLaVA states the count: image_seq_length (16 patches, the CLS token dropped).
    "llava": (
        "LlavaForConditionalGeneration",
        {
            "text_config": _LLAMA,
            "vision_config": _VISION,
            "image_seq_length": 16,
            "image_token_index": 999,
        },
        {},
        999,
        16,
    ),
    # PaliGemma derives text_config.num_image_tokens from the vision tower: 16.
    "paligemma": (
        "PaliGemmaForConditionalGeneration",
        {
            "text_config": {**_LLAMA, "head_dim": 16, "num_key_value_heads": 1},
            "vision_config": _VISION,
            "image_token_index": 999,
            "projection_dim": 64,
        },
        {},
        999,
        16,
    ),
    # BLIP-2: num_query_tokens placeholders; its default config has no placeholder id, so by
    # name it gets the last id of the text vocabulary (999), as the hand-built config says.
    "blip-2": (
        "Blip2ForConditionalGeneration",
        {
            "vision_config": _VISION,
            "qformer_config": _QFORMER,
            "text_config": _OPT,
            "num_query_tokens": 4,
        },
        {"image_token_index": 999},
        999,
        4,
    ),
}


def _by_hand(
    arch: str, cls_name: str, fields: dict[str, Any]
) -> tuple[Any, tuple[Any, ...], dict[str, Any]]:
    """The class built by hand on CPU from the same fields, and the inputs ``hf:arch`` gives it."""
    config = transformers.AutoConfig.for_model(arch, **fields)
    torch.manual_seed(0)
    # No parameter needs a gradient: FlopCounterMode's module tracker then hooks no backward
    # (BLIP-2's Q-Former feeds a parameter straight into a module, which it cannot hook).
    model = getattr(transformers, cls_name)(config).eval().requires_grad_(False)
    args, kwargs = resolve(f"hf:{arch}").example_inputs(device="cpu", module=model)
    return model, args, kwargs


def _reference(model: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[int, int]:
    """Parameters, and FlopCounterMode's MACs (FLOPs / 2) on SDPA's math path."""
    from torch.utils.flop_counter import FlopCounterMode

    with torch.no_grad(), canonical_kernels(), FlopCounterMode(display=False) as counter:
        model(*args, **kwargs)
    return sum(p.numel() for p in model.parameters()), counter.get_total_flops() // 2


@pytest.mark.parametrize("arch", list(VISION_LANGUAGE))
def test_generative_vision_language_models_get_image_placeholders_in_their_ids(
    arch: str,
) -> None:
    cls_name, fields, by_hand_adds, token, count = VISION_LANGUAGE[arch]
    with torch.device("meta"):
        built = resolve(f"hf:{arch}").build(**fields)
    assert type(built).__name__ == cls_name
    model, args, kwargs = _by_hand(arch, cls_name, {**fields, **by_hand_adds})
    assert args == () and set(kwargs) == {"pixel_values", "input_ids"}
    assert kwargs["pixel_values"].shape == (1, 3, 56, 56)
    ids = kwargs["input_ids"][0]
    assert ids[:count].tolist() == [token] * count  # one image's placeholders, then text
    assert token not in ids[count:].tolist() and len(ids) > count
    # Real tensors: transformers checks that the placeholders match the image features.
    params, macs = _reference(model, args, kwargs)

    ours = profile_model(f"hf:{arch}", **fields)
    assert ours.uncounted_ops == []
    assert f"built {cls_name}" in ours.capture.reason
    assert ours.total_params == params
    assert macs > 0 and ours.total_macs == macs, (
        f"hf:{arch} ({ours.capture.mode}): ours {ours.total_macs:,}, FlopCounterMode {macs:,}"
    )


def test_llava_at_its_default_widths_profiles_on_meta_with_the_count_its_tower_gives() -> None:
    # Hundreds of millions of parameters: on real tensors the size check would refuse it, and
    # its placeholder check reads tensor values, which meta tensors do not hold.
    spec = resolve("hf:llava")
    with torch.device("meta"):
        default = spec.build()
    args, kwargs = spec.example_inputs(device="meta", module=default)
    # LLaVA's own tower: 336 pixels in 14-pixel patches, 24 x 24 = 576 = image_seq_length.
    assert kwargs["pixel_values"].shape == (1, 3, 336, 336)
    assert kwargs["input_ids"].shape == (1, 576 + 32)
    # vision_config={...} replaces the tower with CLIP's defaults (224 pixels, 32-pixel
    # patches: 49 features) while image_seq_length stays 576: the count is measured, not read.
    p = profile_model(
        "hf:llava", text_config={"num_hidden_layers": 2}, vision_config={"num_hidden_layers": 2}
    )
    assert p.capture.mode == "meta"
    assert [(i.name, i.shape) for i in p.inputs] == [
        ("pixel_values", [1, 3, 224, 224]),
        ("input_ids", [1, 49 + 32]),
    ]


def test_detectors_build_their_detection_head_and_say_so() -> None:
    fields = {
        "num_hidden_layers": 2,
        "hidden_size": 64,
        "intermediate_size": 128,
        "num_attention_heads": 4,
        "image_size": [64, 96],
    }
    model, args, kwargs = _by_hand("yolos", "YolosForObjectDetection", fields)
    assert args[0].shape == (1, 3, 64, 96)  # pixel_values at the config's size
    params, macs = _reference(model, args, kwargs)
    ours = profile_model("hf:yolos", **fields)  # type: ignore[arg-type]
    assert "built YolosForObjectDetection" in ours.capture.reason
    assert "hf_class=YolosModel" in ours.capture.reason
    assert ours.uncounted_ops == []
    assert (ours.total_params, ours.total_macs) == (params, macs)


def test_detr_gets_its_detection_head_at_its_input_size_and_hf_class_picks_the_base() -> None:
    spec = resolve("hf:detr")
    with torch.device("meta"):
        head = spec.build(encoder_layers=2, decoder_layers=2)
        base = spec.build(encoder_layers=2, decoder_layers=2, hf_class="DetrModel")
    assert type(head).__name__ == "DetrForObjectDetection"
    assert type(base).__name__ == "DetrModel"
    # DETR's config has no image size: its shortest edge, 800.
    args, kwargs = spec.example_inputs(device="meta", module=head)
    assert [tuple(a.shape) for a in args] == [(1, 3, 800, 800)] and kwargs == {}


def test_transformers_value_checks_are_off_only_inside_and_a_users_setting_is_kept(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv(TRANSFORMERS_CHECKS_VARIABLE, raising=False)
    with value_checks_off():
        assert os.environ[TRANSFORMERS_CHECKS_VARIABLE] == "1"
    assert TRANSFORMERS_CHECKS_VARIABLE not in os.environ
    monkeypatch.setenv(TRANSFORMERS_CHECKS_VARIABLE, "0")
    with value_checks_off():
        assert os.environ[TRANSFORMERS_CHECKS_VARIABLE] == "0"
    assert os.environ[TRANSFORMERS_CHECKS_VARIABLE] == "0"


def test_image_features_that_do_not_fit_the_language_model_are_refused_naming_the_field() -> None:
    # A 32-wide image projection into a 64-wide language model: transformers refuses any image
    # on real tensors; meta and fake tensors (its value checks off) would not notice.
    _, fields, *_ = VISION_LANGUAGE["paligemma"]
    with pytest.raises(ModelInputError, match=r"32 wide.*embeddings 64.*projection_dim"):
        profile_model("hf:paligemma", **{**fields, "projection_dim": 32})
