"""``hf:NAME`` for every kind of transformers model: audio, segmentation, dual towers.

Each model is built by name with two layers, on meta, in the default mode; the reference is the
same transformers class built by hand from a config constructed with the same fields.
"""

from __future__ import annotations

from typing import Any

import pytest
import torch

from pytest_modelprof.errors import ModelBuildError
from pytest_modelprof.models import resolve
from pytest_modelprof.profile import profile_model

transformers = pytest.importorskip("transformers")


def _params_by_hand(cls_name: str, model_type: str, **fields: Any) -> int:
    config = transformers.AutoConfig.for_model(model_type, **fields)
    with torch.device("meta"):
        module = getattr(transformers, cls_name)(config)
    return sum(p.numel() for p in module.parameters())


def test_a_tuple_of_classes_builds_the_first_and_hf_class_picks_another() -> None:
    # DeiT's image-classification mapping holds two classes; the first is the plain classifier.
    p = profile_model("hf:deit", num_hidden_layers=2)
    assert p.capture.mode == "meta"
    assert "DeiTForImageClassification" in p.capture.reason
    assert p.total_params == _params_by_hand(
        "DeiTForImageClassification", "deit", num_hidden_layers=2
    )
    teacher = "DeiTForImageClassificationWithTeacher"
    with torch.device("meta"):
        module = resolve("hf:deit").build(num_hidden_layers=2, hf_class=teacher)
    assert type(module).__name__ == teacher


def test_a_class_that_cannot_be_found_is_a_build_error_naming_the_classes_tried() -> None:
    with pytest.raises(ModelBuildError, match=r"hf:deit.*'NoSuchDeiTClass'.*hf_class="):
        resolve("hf:deit").build(hf_class="NoSuchDeiTClass")


def test_whisper_gets_log_mel_features_and_decoder_ids() -> None:
    spec = resolve("hf:whisper")
    with torch.device("meta"):
        module = spec.build(encoder_layers=2, decoder_layers=2, num_mel_bins=128)
    args, kwargs = spec.example_inputs(device="meta", module=module)
    # 128 mel bins (large-v3) x 3,000 frames: 30 s, the encoder's 1,500 positions x stride 2.
    assert args == () and kwargs["input_features"].shape == (1, 128, 3000)
    assert kwargs["decoder_input_ids"].dtype == torch.long
    p = profile_model("hf:whisper", encoder_layers=2, decoder_layers=2)
    assert p.capture.mode == "meta" and p.uncounted_ops == []
    assert p.total_params == _params_by_hand(
        "WhisperModel", "whisper", encoder_layers=2, decoder_layers=2
    )
    # Speech2Text puts frames first: 3,000 frames (30 s at a 10 ms hop) of 80 filterbanks.
    s2t = resolve("hf:speech_to_text")
    assert (s2t.input_kind, s2t.default_input_shape) == ("speech_seq2seq", (1, 3000, 80))


@pytest.mark.parametrize(
    ("arch", "cls_name"), [("wav2vec2", "Wav2Vec2Model"), ("hubert", "HubertModel")]
)
def test_raw_audio_models_get_one_second_of_16_khz_samples(arch: str, cls_name: str) -> None:
    spec = resolve(f"hf:{arch}")
    assert spec.input_kind == "input_values" and spec.default_input_shape == (1, 16_000)
    assert spec.input_shape_for(seconds=2) == (1, 32_000)
    p = profile_model(f"hf:{arch}", num_hidden_layers=2)
    # The positional convolution's weight norm (_weight_norm_interface) is priced too.
    assert p.capture.mode == "meta" and p.uncounted_ops == []
    assert p.total_params == _params_by_hand(cls_name, arch, num_hidden_layers=2)


def test_segmentation_models_get_pixel_values_at_the_configs_size() -> None:
    spec = resolve("hf:segformer")
    assert spec.default_input_shape == (1, 3, 512, 512)
    p = profile_model("hf:segformer", depths=[1, 1, 1, 1])
    assert p.capture.mode == "meta" and p.total_macs > 0


def test_overrides_are_constructor_arguments_so_derived_fields_follow() -> None:
    # Falcon derives num_kv_heads from num_attention_heads in its constructor.
    fields = {"hidden_size": 128, "num_attention_heads": 4, "num_hidden_layers": 2}
    p = profile_model("hf:falcon", **fields)  # type: ignore[arg-type]
    assert p.total_params == _params_by_hand("FalconForCausalLM", "falcon", **fields)
    # A new head count on LLaMA derives a new head_dim instead of crashing in attention.
    p = profile_model("hf:llama", num_hidden_layers=2, num_attention_heads=8)
    assert p.capture.mode == "meta"


@pytest.mark.parametrize("arch", ["qwen2", "qwen2_moe", "qwen3_moe"])
def test_fields_the_model_reads_are_accepted_though_the_config_does_not_declare_them(
    arch: str,
) -> None:
    small = resolve(f"hf:{arch}").build  # qwen2 reads getattr(config, "head_dim", ...)
    with torch.device("meta"):
        module = small(num_hidden_layers=2, head_dim=32)
    assert module.config.head_dim == 32


def test_a_field_the_model_never_reads_is_refused_with_the_one_it_does() -> None:
    with pytest.raises(ModelBuildError, match=r"intermediate_size.*mlp_ratio"):
        profile_model("hf:dinov2", num_hidden_layers=2, intermediate_size=512)


def test_nested_sub_configs_take_dicts() -> None:
    p = profile_model(
        "hf:clip",
        text_config={"num_hidden_layers": 2},
        vision_config={"num_hidden_layers": 2},
    )
    config = transformers.CLIPConfig(
        text_config={"num_hidden_layers": 2}, vision_config={"num_hidden_layers": 2}
    )
    with torch.device("meta"):
        by_hand = transformers.CLIPModel(config)
    assert p.total_params == sum(q.numel() for q in by_hand.parameters())


@pytest.mark.parametrize(("arch", "cls_name"), [("clip", "CLIPModel"), ("siglip", "SiglipModel")])
def test_clip_and_siglip_by_name_are_the_dual_tower_models(arch: str, cls_name: str) -> None:
    spec = resolve(f"hf:{arch}")
    with torch.device("meta"):
        module = spec.build()
    assert type(module).__name__ == cls_name
    args, kwargs = spec.example_inputs(device="meta", module=module)
    assert set(kwargs) == {"pixel_values", "input_ids"}


def test_the_cli_takes_seconds_of_audio(capsys: pytest.CaptureFixture[str]) -> None:
    import json

    from pytest_modelprof.cli import main

    argv = ["profile", "hf:wav2vec2", "--arch", "num_hidden_layers=2", "--seconds", "0.5"]
    assert main([*argv, "--json"]) == 0
    inputs = json.loads(capsys.readouterr().out)["inputs"]
    assert [(i["name"], i["shape"]) for i in inputs] == [("input_values", [1, 8000])]
    assert main(["profile", "hf:gpt2", "--seconds", "1"]) != 0
    assert "not raw audio" in capsys.readouterr().err


def test_a_derived_read_only_field_is_refused_naming_it() -> None:
    # Falcon's head_dim is a property: hidden_size / num_attention_heads.
    with pytest.raises(ModelBuildError, match=r"head_dim is derived from other fields"):
        resolve("hf:falcon").build(num_hidden_layers=2, head_dim=16)
