"""Hugging Face transformers as a model source: ``hf:ARCH`` and ``hf:FOLDER``, offline."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch

from pytest_modelprof.errors import ModelBuildError, ModelInputError, ModelNotFoundError
from pytest_modelprof.models import list_models, resolve
from pytest_modelprof.models._hf import DEFAULT_SEQ_LEN
from pytest_modelprof.profile import profile_model

transformers = pytest.importorskip("transformers")

# A LLaMA small enough to build on the CPU in a blink (GQA: 4 query heads share 2 KV heads).
TINY_LLAMA = {
    "hidden_size": 64,
    "intermediate_size": 128,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "vocab_size": 1000,
}


@pytest.mark.parametrize(
    ("name", "cls_name", "kind", "shape"),
    [
        ("hf:gpt2", "GPT2LMHeadModel", "input_ids", (1, DEFAULT_SEQ_LEN)),
        ("hf:llama", "LlamaForCausalLM", "input_ids", (1, DEFAULT_SEQ_LEN)),
        ("hf:bert", "BertModel", "input_ids", (1, DEFAULT_SEQ_LEN)),
        ("hf:t5", "T5ForConditionalGeneration", "seq2seq_ids", (1, DEFAULT_SEQ_LEN)),
        ("hf:vit", "ViTForImageClassification", "tensor", (1, 3, 224, 224)),
        # An encoder-decoder without a seq2seq LM class stays whole (not its decoder as an LM);
        # it takes 30 s of 80-bin log-mel features (and decoder ids).
        ("hf:whisper", "WhisperModel", "speech_seq2seq", (1, 80, 3000)),
    ],
)
def test_architectures_build_from_their_config_class_on_meta(
    name: str, cls_name: str, kind: str, shape: tuple[int, ...] | None
) -> None:
    spec = resolve(name)
    assert (spec.source, spec.group, spec.input_kind) == ("hf", "hf", kind)
    assert spec.default_input_shape == shape
    with torch.device("meta"):
        module = spec.build()
    assert type(module).__name__ == cls_name
    assert all(p.is_meta for p in module.parameters()) and not module.training


def test_text_models_get_token_ids_of_the_default_length() -> None:
    assert DEFAULT_SEQ_LEN == 128
    args, kwargs = resolve("hf:gpt2").example_inputs(device="meta")
    assert args == () and set(kwargs) == {"input_ids"}
    assert kwargs["input_ids"].shape == (1, 128) and kwargs["input_ids"].dtype == torch.long
    _, kwargs = resolve("hf:t5").example_inputs((2, 16), device="meta")
    assert {k: tuple(v.shape) for k, v in kwargs.items()} == {
        "input_ids": (2, 16),
        "decoder_input_ids": (2, 16),
    }
    # Real ids stay below the config's vocabulary size (GPT-2: 50,257).
    _, kwargs = resolve("hf:gpt2").example_inputs()
    assert int(kwargs["input_ids"].max()) < 50_257


def test_seq_len_changes_only_the_sequence_dimension() -> None:
    spec = resolve("hf:gpt2")
    assert spec.input_shape_for(seq_len=512) == (1, 512)
    assert spec.input_shape_for(batch=4, seq_len=64) == (4, 64)
    with pytest.raises(ModelInputError, match="text models only"):
        resolve("hf:vit").input_shape_for(seq_len=64)
    with pytest.raises(ModelInputError, match="positive int"):
        spec.input_shape_for(seq_len=0)


def test_profile_model_by_name_gpt2_small() -> None:
    p = profile_model("hf:gpt2")
    assert p.capture.mode == "meta"
    # GPT-2 small: 124,439,808 parameters (the LM head is tied to the token embedding).
    assert p.total_params == 124_439_808
    # Per token and layer 12*d^2 (qkv 3d^2, proj d^2, MLP 8d^2), attention 2*T^2*d per layer,
    # LM head T*d*V: 12*12*768^2*128 + 12*2*128^2*768 + 128*768*50257.
    assert p.total_macs == 10_871_635_968 + 301_989_888 + 4_940_464_128
    assert p.uncounted_ops == []


def test_arch_overrides_set_config_fields() -> None:
    spec = resolve("hf:llama")
    with torch.device("meta"):
        module = spec.build(**TINY_LLAMA)
    config = module.config  # type: ignore[union-attr]
    assert (config.num_hidden_layers, config.num_key_value_heads) == (2, 2)
    # The attribute_map aliases work too: GPT-2 calls its layer count n_layer.
    with torch.device("meta"):
        gpt2 = resolve("hf:gpt2").build(num_hidden_layers=2)
    assert gpt2.config.n_layer == 2  # type: ignore[union-attr]


def test_an_unknown_config_field_fails_with_close_matches() -> None:
    with pytest.raises(ModelBuildError, match=r"no field 'num_hidden_layer'.*num_hidden_layers"):
        with torch.device("meta"):
            resolve("hf:llama").build(num_hidden_layer=2)


def test_hf_class_picks_another_head() -> None:
    with torch.device("meta"):
        module = resolve("hf:bert").build(hf_class="BertForMaskedLM")
    assert type(module).__name__ == "BertForMaskedLM"
    with pytest.raises(ModelBuildError, match="no class 'BertForNothing'"):
        resolve("hf:bert").build(hf_class="BertForNothing")


def test_vision_models_take_another_resolution() -> None:
    spec = resolve("hf:vit")
    assert spec.arch_kwargs_for((1, 3, 384, 384)) == {"image_size": 384}
    with torch.device("meta"):
        module = spec.build((1, 3, 384, 384))
    assert module.config.image_size == 384  # type: ignore[union-attr]


def test_a_hub_id_fails_at_once_and_never_downloads() -> None:
    with pytest.raises(ModelNotFoundError, match=r"never downloads.*hf:DIR.*hf:llama"):
        resolve("hf:meta-llama/Llama-2-7b-hf")


def test_a_checkpoint_name_suggests_its_architecture() -> None:
    with pytest.raises(ModelNotFoundError) as info:
        resolve("hf:gpt2-medium")
    message = str(info.value)
    assert "'hf:gpt2'" in message and "never downloaded" in message


def test_a_local_folder_builds_its_config_architecture(tmp_path: Path) -> None:
    config = transformers.LlamaConfig(**TINY_LLAMA, architectures=["LlamaForCausalLM"])
    config.save_pretrained(tmp_path)
    spec = resolve(f"hf:{tmp_path}")
    assert spec.default_input_shape == (1, DEFAULT_SEQ_LEN) and spec.vocab_size == 1000
    p = profile_model(f"hf:{tmp_path}")
    real = transformers.LlamaForCausalLM(config)
    assert p.total_params == sum(t.numel() for t in real.parameters())


def test_a_local_folder_without_config_or_with_remote_code_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ModelNotFoundError, match="has no config.json"):
        resolve(f"hf:{tmp_path}")
    (tmp_path / "config.json").write_text(
        json.dumps({"model_type": "llama", "auto_map": {"AutoModel": "modeling_x.XModel"}})
    )
    with pytest.raises(ModelNotFoundError, match="remote code"):
        resolve(f"hf:{tmp_path}")


def test_listed_under_their_own_group() -> None:
    names = list_models()["hf"]
    assert {"hf:gpt2", "hf:bert", "hf:llama", "hf:mistral", "hf:mixtral", "hf:t5"} <= set(names)
    assert list_models("hf:qwen2")["hf"][0] == "hf:qwen2"


def test_marker_with_an_hf_model_just_works(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_lm="""
        import pytest

        @pytest.mark.profile(model="hf:gpt2", input_shape=(1, 16))
        def test_gpt2_cost():
            pass
        """
    )
    # Subprocesses: an in-process run that imports transformers' modules for the first time has
    # pytester drop them afterwards, and this worker's later tests would then mix two copies of
    # transformers' classes (`LlamaForCausalLM(config)` refusing its own LlamaConfig).
    first = pytester.runpytest_subprocess("-p", "no:randomly", "--modelprof-update-baselines")
    first.assert_outcomes(passed=1)
    baseline = next((pytester.path / "baselines").rglob("*.json"))
    document = json.loads(baseline.read_text())
    assert "124439808" in json.dumps(document)  # GPT-2 small's parameters, profiled by name
    pytester.runpytest_subprocess("-p", "no:randomly").assert_outcomes(passed=1)


def test_missing_transformers_gives_install_hint() -> None:
    code = textwrap.dedent(
        """
        import sys
        sys.modules["transformers"] = None
        from pytest_modelprof.errors import ModelNotFoundError
        from pytest_modelprof.models import resolve
        from pytest_modelprof.models._hf import hf_names
        try:
            resolve("hf:gpt2")
        except ModelNotFoundError as exc:
            print(exc)
        print(hf_names())
        """
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "transformers is not installed" in out.stdout
    assert 'pip install "pytest-modelprof[hf]"' in out.stdout
    assert out.stdout.strip().endswith("()")


def test_cli_profile_by_name_with_seq_len(capsys: pytest.CaptureFixture[str]) -> None:
    from pytest_modelprof.cli import main

    assert main(["profile", "hf:gpt2", "--seq-len", "256", "--json"]) == 0
    document = json.loads(capsys.readouterr().out)
    # The GPT-2 closed form above at T = 256: 12*12*768^2*T + 12*2*T^2*768 + T*768*50257.
    assert document["total_macs"] == 21_743_271_936 + 1_207_959_552 + 9_880_928_256
    assert main(["profile", "resnet18", "--seq-len", "256"]) == 2
    err = capsys.readouterr().err  # in the CLI's words: what to give instead
    assert "not token ids" in err and "give --input-shape instead" in err


def test_nothing_touches_the_network(monkeypatch: pytest.MonkeyPatch) -> None:
    import socket

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError(f"network access attempted: {args}")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setattr(socket, "getaddrinfo", refuse)
    assert profile_model("hf:gpt2", input_shape=(1, 8)).total_params == 124_439_808
    with pytest.raises(ModelNotFoundError, match="never downloads"):
        resolve("hf:openai-community/gpt2")


# A named model's inputs follow the model as built, whatever --arch changed.
TINY_GPT2 = {"n_layer": 1, "n_embd": 64, "n_head": 4}
TINY_VIT = {
    "num_hidden_layers": 1,
    "hidden_size": 64,
    "num_attention_heads": 4,
    "intermediate_size": 128,
}


def test_token_ids_come_from_the_built_models_vocabulary() -> None:
    # A 1,000-word GPT-2 takes ids below 1,000; the default config's vocabulary has 50,257.
    p = profile_model("hf:gpt2", mode="real", vocab_size=1000, **TINY_GPT2)  # type: ignore[arg-type]
    assert p.capture.mode == "real"
    spec = resolve("hf:gpt2")
    module = spec.build(vocab_size=1000, **TINY_GPT2)
    _, kwargs = spec.example_inputs(module=module)
    assert int(kwargs["input_ids"].max()) < 1000


def test_the_default_sequence_follows_the_built_models_positions() -> None:
    # 32 learned positions: the default 128 tokens would index past them (silently on meta).
    p = profile_model("hf:gpt2", n_positions=32, **TINY_GPT2)  # type: ignore[arg-type]
    assert [(s.name, s.shape) for s in p.inputs] == [("input_ids", [1, 32])]
    real = profile_model("hf:gpt2", mode="real", n_positions=32, **TINY_GPT2)  # type: ignore[arg-type]
    assert real.total_macs == p.total_macs


@pytest.mark.parametrize(
    ("arch", "shape"),
    [({"image_size": 64}, [1, 3, 64, 64]), ({"num_channels": 1}, [1, 1, 224, 224])],
)
def test_the_default_image_follows_the_built_models_size_and_channels(
    arch: dict[str, int], shape: list[int]
) -> None:
    # ViT checks its input against its config: the default config's 3 x 224 x 224 is refused.
    p = profile_model("hf:vit", **TINY_VIT, **arch)  # type: ignore[arg-type]
    assert p.capture.mode == "meta"
    assert [s.shape for s in p.inputs] == [shape]
