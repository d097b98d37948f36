"""``modelprof sweep --sweep-arch``: rebuild the model per value of a builder keyword and fit
the growth exponent along that axis (torchvision keywords, import-path factories, hf: names)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_modelprof.cli import main

Capsys = pytest.CaptureFixture[str]

FACTORY = '''
from torch import nn

from pytest_modelprof.models import ModelSpec


def make(layers=1, width=16):
    return nn.Sequential(*[nn.Linear(width, width) for _ in range(layers)])


def make_llama(num_hidden_layers=2, hidden_size=64, intermediate_size=128):
    from transformers import LlamaConfig, LlamaForCausalLM

    config = LlamaConfig(vocab_size=128, hidden_size=hidden_size,
                         intermediate_size=intermediate_size,
                         num_hidden_layers=num_hidden_layers, num_attention_heads=4,
                         num_key_value_heads=4, max_position_embeddings=64)
    return LlamaForCausalLM(config)


tiny_llama = ModelSpec(name="tiny_llama", source="import", builder=make_llama,
                       default_input_shape=(1, 16), input_kind="token_ids", vocab_size=128)
'''


@pytest.fixture
def factories(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    (tmp_path / "sweep_arch_factories.py").write_text(FACTORY, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    return "sweep_arch_factories"


def test_an_import_path_factory_swept_over_depth(capsys: Capsys, factories: str) -> None:
    code = main(["sweep", f"{factories}:make", "--sweep-arch", "layers=1,2,4",
                 "--arch", "width=32", "--input-shape", "2,32", "--no-latency", "--json"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    doc = json.loads(captured.out)
    (series,) = doc["series"]
    assert series["axis"] == "layers" and series["values"] == [1, 2, 4]
    assert series["fits"]["flops"]["exponent"] == pytest.approx(1.0, abs=1e-6)
    # width=32 held fixed: 32*32 + 32 parameters per layer
    assert [p["params"] for p in series["points"]] == [1056, 2112, 4224]


def test_a_torchvision_builder_keyword_in_the_text_report(capsys: Capsys) -> None:
    code = main(["sweep", "resnet18", "--sweep-arch", "num_classes=10,100,1000",
                 "--input-shape", "1,3,32,32", "--no-latency"])
    out = capsys.readouterr().out
    assert code == 0
    assert "growth with num_classes (metric ~ num_classes^k): FLOPs ^" in out


def test_layer_count_of_a_llama_with_the_sequence_length_held(capsys: Capsys,
                                                               factories: str) -> None:
    code = main(["sweep", f"{factories}:tiny_llama", "--arch", "hidden_size=64",
                 "--sweep-arch", "num_hidden_layers=2,4,8", "--seq-len", "32", "--no-latency",
                 "--json"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    doc = json.loads(captured.out)
    (series,) = doc["series"]
    assert series["axis"] == "num_hidden_layers"
    assert all(p["input_shapes"] == [[1, 32]] for p in series["points"])
    # Embedding and LM head stay; every decoder layer adds the same FLOPs: sub-linear in total.
    assert 0.5 < series["fits"]["flops"]["exponent"] < 1.0


def test_the_issue_command_on_hf_llama(capsys: Capsys) -> None:
    from pytest_modelprof.errors import ModelNotFoundError
    from pytest_modelprof.models import resolve

    try:
        resolve("hf:llama")
    except ModelNotFoundError:
        pytest.skip("hf: model names are not available in this build")
    code = main(["sweep", "hf:llama", "--arch", "hidden_size=64", "--arch",
                 "intermediate_size=128", "--arch", "num_attention_heads=4", "--arch",
                 "num_key_value_heads=4", "--sweep-arch", "num_hidden_layers=2,4,8",
                 "--seq-len", "32", "--no-latency", "--json"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    (series,) = json.loads(captured.out)["series"]
    assert series["axis"] == "num_hidden_layers"
    assert 0 < series["fits"]["flops"]["exponent"] <= 1.0 + 1e-6


@pytest.mark.parametrize(("argv", "message"), [
    (["--sweep-arch", "layers=4,2"], "two or more increasing values"),
    (["--sweep-arch", "layers=2"], "two or more increasing values"),
    (["--sweep-arch", "2layers=1,2"], "expected KEY=V1,V2"),
    (["--sweep-arch", "layers=1,2", "--arch", "layers=3"], "layers is both swept and fixed"),
    (["--seq-len", "32"], "with two or more values, or --sweep-arch"),
    (["--batch", "1,x"], "expected positive integers"),
])
def test_bad_sweeps_are_usage_errors(capsys: Capsys, argv: list[str], message: str) -> None:
    assert main(["sweep", "resnet18", *argv]) == 2
    assert message in capsys.readouterr().err


def test_a_keyword_the_builder_does_not_take_names_it(capsys: Capsys, factories: str) -> None:
    code = main(["sweep", f"{factories}:make", "--sweep-arch", "depth=1,2",
                 "--input-shape", "2,16", "--no-latency"])
    assert code == 2
    err = capsys.readouterr().err
    assert "modelprof: error:" in err and "depth" in err
