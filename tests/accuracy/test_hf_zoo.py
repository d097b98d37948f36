"""Hugging Face transformers by name, every kind, against FlopCounterMode and exact parameters.

``ZOO`` holds 54 architectures across decoders, encoders, encoder-decoders, vision, speech and
vision-language models, each named as a new user would (``hf:NAME``) with two layers and the
config's default widths otherwise. Each must

- build the class its users mean (``ZOO``'s second column: the dual-tower CLIP, Whisper whole),
- profile in the default mode with nothing uncounted,
- have parameters equal to ``sum(p.numel())`` of that class built by hand from
  ``AutoConfig.for_model(NAME, **fields)``, and
- have MACs equal to ``torch.utils.flop_counter.FlopCounterMode`` (FLOPs / 2) on that hand-built
  model and the same inputs, SDPA on its math path for both (``canonical_kernels``): on meta
  tensors where the profile ran on meta, else on real CPU tensors.

``MODELS_OWN_ERROR`` holds architectures transformers itself cannot build or run at this size;
the profile's error must say the error is the model's own, and building or running the class by
hand must fail with the same exception. Fake and real tensors must count the same FLOPs on every
one, with and without an attention mask. The default run checks ``QUICK``; all of them::

    python -m pytest tests/accuracy/test_hf_zoo.py -m zoo -p no:randomly
"""

from __future__ import annotations

import contextlib
from typing import Any

import pytest

from pytest_modelprof.errors import ModelBuildError, ModelForwardError, ModelprofError
from pytest_modelprof.profile import profile_model

transformers = pytest.importorskip("transformers")

_TWO = {"num_hidden_layers": 2}
_ENC_DEC = {"encoder_layers": 2, "decoder_layers": 2}
_TOWERS = {"text_config": {"num_hidden_layers": 2}, "vision_config": {"num_hidden_layers": 2}}

ZOO: dict[str, tuple[str, dict[str, Any]]] = {
    # decoders
    "gpt2": ("GPT2LMHeadModel", _TWO),
    "llama": ("LlamaForCausalLM", _TWO),
    "mistral": ("MistralForCausalLM", _TWO),
    "qwen2": ("Qwen2ForCausalLM", _TWO),
    "qwen3": ("Qwen3ForCausalLM", _TWO),
    "gemma": ("GemmaForCausalLM", _TWO),
    "gemma2": ("Gemma2ForCausalLM", _TWO),
    "gemma3_text": ("Gemma3ForCausalLM", _TWO),
    "phi": ("PhiForCausalLM", _TWO),
    "phi3": ("Phi3ForCausalLM", _TWO),
    "olmo2": ("Olmo2ForCausalLM", _TWO),
    "falcon": ("FalconForCausalLM", {**_TWO, "hidden_size": 256, "num_attention_heads": 8}),
    "gpt_neox": ("GPTNeoXForCausalLM", _TWO),
    "gptj": ("GPTJForCausalLM", _TWO),
    "bloom": ("BloomForCausalLM", _TWO),
    "opt": ("OPTForCausalLM", _TWO),
    "cohere": ("CohereForCausalLM", _TWO),
    "granite": ("GraniteForCausalLM", _TWO),
    "starcoder2": ("Starcoder2ForCausalLM", _TWO),
    "stablelm": ("StableLmForCausalLM", _TWO),
    "deepseek_v3": ("DeepseekV3ForCausalLM", _TWO),
    "mamba": ("MambaForCausalLM", _TWO),
    "mamba2": ("Mamba2ForCausalLM", _TWO),
    # encoders
    "bert": ("BertModel", _TWO),
    "roberta": ("RobertaModel", _TWO),
    "deberta-v2": ("DebertaV2Model", _TWO),
    "electra": ("ElectraModel", _TWO),
    "distilbert": ("DistilBertModel", _TWO),
    "albert": ("AlbertModel", _TWO),
    # encoder-decoders
    "t5": ("T5ForConditionalGeneration", {"num_layers": 2, "num_decoder_layers": 2}),
    "bart": ("BartForConditionalGeneration", _ENC_DEC),
    "marian": ("MarianMTModel", _ENC_DEC),
    "mbart": ("MBartForConditionalGeneration", _ENC_DEC),
    "pegasus": ("PegasusForConditionalGeneration", _ENC_DEC),
    # vision
    "vit": ("ViTForImageClassification", _TWO),
    "deit": ("DeiTForImageClassification", _TWO),  # first of two classes in its mapping
    "swin": ("SwinForImageClassification", {"depths": [1, 1], "num_heads": [3, 6]}),
    "dinov2": ("Dinov2ForImageClassification", _TWO),
    "beit": ("BeitForImageClassification", _TWO),
    "convnext": ("ConvNextForImageClassification", {"depths": [1, 1, 1, 1]}),
    "resnet": ("ResNetForImageClassification", {"depths": [1, 1, 1, 1]}),
    "segformer": ("SegformerForSemanticSegmentation", {"depths": [1, 1, 1, 1]}),
    # speech
    "whisper": ("WhisperModel", _ENC_DEC),
    "speech_to_text": ("Speech2TextModel", _ENC_DEC),
    "wav2vec2": ("Wav2Vec2Model", _TWO),
    "hubert": ("HubertModel", _TWO),
    # vision-language
    "clip": ("CLIPModel", _TOWERS),
    "siglip": ("SiglipModel", _TOWERS),
    "blip": ("BlipModel", _TOWERS),
    # generative vision-language: pixel_values and one image's placeholder tokens in input_ids
    "llava": ("LlavaForConditionalGeneration", _TOWERS),
    "paligemma": (  # Gemma's 257k-word vocabulary is too big for the CPU reference run
        "PaliGemmaForConditionalGeneration",
        {
            **_TOWERS,
            # PaliGemma-3B's Gemma-2B text widths (a text_config dict starts from Gemma-7B's,
            # whose 3,072-wide embeddings the 2,048-wide image projection does not fit).
            "text_config": {
                "num_hidden_layers": 2,
                "vocab_size": 32_000,
                "hidden_size": 2048,
                "intermediate_size": 16_384,
                "num_attention_heads": 8,
                "num_key_value_heads": 1,
            },
            "image_token_index": 31_999,
        },
    ),
    "blip-2": (
        "Blip2ForConditionalGeneration",
        {**_TOWERS, "qformer_config": {"num_hidden_layers": 2}, "image_token_index": 50_271},
    ),
    # object detection
    "detr": ("DetrForObjectDetection", _ENC_DEC),
    "yolos": ("YolosForObjectDetection", _TWO),
}

QUICK = frozenset(
    {"llama", "falcon", "bert", "t5", "deit", "segformer", "whisper", "wav2vec2", "clip"}
)

MODELS_OWN_ERROR: dict[str, tuple[type[ModelprofError], str]] = {
    # transformers 5.2x: DbrxForCausalLM reads rope_theta its attention sub-config lacks.
    "dbrx": (ModelBuildError, "DbrxForCausalLM"),
    # Jamba's forward asks its cache for a length its linear-attention layers cannot give.
    "jamba": (ModelForwardError, "JambaForCausalLM"),
}


def _params() -> list[object]:
    return [pytest.param(a, marks=pytest.mark.zoo(quick=a in QUICK), id=a) for a in ZOO]


def reference(arch: str, mode: str) -> tuple[int, int]:
    """Parameters and FlopCounterMode MACs of ``ZOO[arch]`` built by hand from its config."""
    import torch
    from torch.utils.flop_counter import FlopCounterMode

    from pytest_modelprof.capture.kernels import value_checks_off
    from pytest_modelprof.models import resolve
    from pytest_modelprof.profile import canonical_kernels

    cls_name, fields = ZOO[arch]
    config = transformers.AutoConfig.for_model(arch, **fields)
    device = "meta" if mode == "meta" else "cpu"
    with torch.device(device):
        # No gradients: FlopCounterMode's module tracker cannot hook a parameter fed straight
        # into a module (BLIP-2's query tokens), and no count depends on it.
        model = getattr(transformers, cls_name)(config).eval().requires_grad_(False)
    params = sum(p.numel() for p in model.parameters())
    torch.manual_seed(0)
    args, kwargs = resolve(f"hf:{arch}").example_inputs(device=device, module=model)
    # On meta, as in our capture, transformers' checks that read tensor values are off.
    checks = value_checks_off() if device == "meta" else contextlib.nullcontext()
    with torch.no_grad(), canonical_kernels(), checks, FlopCounterMode(display=False) as counter:
        model(*args, **kwargs)
    return params, counter.get_total_flops() // 2


def test_the_zoo_spans_every_kind() -> None:
    assert len(ZOO) >= 40
    assert QUICK <= set(ZOO) and len(QUICK) <= 10
    kinds = {"input_ids", "seq2seq_ids", "tensor", "speech_seq2seq", "input_values", "image_text"}
    # (vision_language: the unit tests in tests/unit/models/test_models_hf_heads.py)
    from pytest_modelprof.models import resolve

    assert {resolve(f"hf:{a}").input_kind for a in QUICK} == kinds  # the quick run: every kind


@pytest.mark.parametrize("arch", _params())
def test_params_exact_and_macs_match_flop_counter(arch: str) -> None:
    import torch

    from pytest_modelprof.models import resolve

    cls_name, fields = ZOO[arch]
    with torch.device("meta"):
        built = resolve(f"hf:{arch}").build(**fields)
    assert type(built).__name__ == cls_name

    ours = profile_model(f"hf:{arch}", **fields)
    assert ours.uncounted_ops == []
    params, macs = reference(arch, ours.capture.mode)
    assert ours.total_params == params
    assert macs > 0
    assert ours.total_macs == macs, (
        f"hf:{arch} ({ours.capture.mode}): ours {ours.total_macs:,} MACs, FlopCounterMode {macs:,}"
    )


def masked(kwargs: dict[str, Any]) -> dict[str, Any] | None:
    """``kwargs`` with an all-ones attention mask beside each token-id input (None: no ids)."""
    import torch

    masks = {
        k.replace("input_ids", "attention_mask"): torch.ones_like(v)
        for k, v in kwargs.items()
        if k in ("input_ids", "decoder_input_ids")
    }
    return {**kwargs, **masks} if masks else None


# LLaVA's default config puts its image placeholder (32,000) past its text vocabulary (32,000
# words): meta and fake tensors never index the embedding, real ones fail. LLaVA-1.5's
# checkpoints have 32,064 words.
REAL_RUNNABLE: dict[str, dict[str, Any]] = {
    "llava": {**_TOWERS, "text_config": {"num_hidden_layers": 2, "vocab_size": 32_064}},
}


@pytest.mark.parametrize("arch", [pytest.param(a, marks=pytest.mark.zoo, id=a) for a in ZOO])
def test_fake_and_real_tensors_count_the_same_flops(arch: str) -> None:
    # transformers reads the values of attention masks (and of the masks it makes itself) to
    # skip building them: on fake tensors those values are kept, so the same path runs.
    # By name: each mode builds the model once (fake on meta), with its default inputs, then
    # with the same inputs plus all-ones masks. (The quick run: tests/unit/test_profile_modes.py
    # with small GPT-2, BERT, LLaMA and BART.)
    import torch

    from pytest_modelprof.models import resolve

    fields = REAL_RUNNABLE.get(arch, ZOO[arch][1])
    spec = resolve(f"hf:{arch}")
    with torch.device("meta"):
        built = spec.build(**fields)
    args, kwargs = spec.example_inputs(device="cpu", module=built)
    with_masks = masked(kwargs)
    variants: dict[str, Any] = {"default inputs": None}
    if with_masks is not None:
        variants["all-ones masks"] = (args, with_masks)
    for what, inputs in variants.items():
        fake = profile_model(f"hf:{arch}", inputs=inputs, mode="fake", **fields)
        real = profile_model(f"hf:{arch}", inputs=inputs, mode="real", **fields)
        assert fake.total_flops == real.total_flops, (arch, what)


@pytest.mark.parametrize(
    "arch", [pytest.param(a, marks=pytest.mark.zoo(quick=a == "jamba")) for a in MODELS_OWN_ERROR]
)
def test_what_transformers_cannot_run_is_reported_as_the_models_own_error(arch: str) -> None:
    import torch

    error, cls_name = MODELS_OWN_ERROR[arch]
    with pytest.raises(error, match="the model's own error") as raised:
        profile_model(f"hf:{arch}", num_hidden_layers=2)
    cause = raised.value.__cause__
    assert cause is not None
    # By hand (on meta: the error comes before any data is read): the same exception.
    config = transformers.AutoConfig.for_model(arch, num_hidden_layers=2)
    with pytest.raises(type(cause)) as by_hand, torch.device("meta"):
        model = getattr(transformers, cls_name)(config).eval()
        with torch.no_grad():
            model(input_ids=torch.randint(0, 100, (1, 16)))
    assert str(by_hand.value) == str(cause)
