"""``modelprof llm`` and ``profile_llm``: JSON keys, the roofline, user decoders, bad input."""

from __future__ import annotations

import json
from typing import Any

import pytest
import torch
from torch import nn

pytest.importorskip("transformers")

from pytest_modelprof.cli import main  # noqa: E402
from pytest_modelprof.errors import ModelInputError  # noqa: E402
from pytest_modelprof.llm import profile_llm  # noqa: E402
from pytest_modelprof.machines import MACHINES  # noqa: E402

LLAMA = "num_hidden_layers=2,hidden_size=64,intermediate_size=96,num_attention_heads=4,"
LLAMA += "num_key_value_heads=2,vocab_size=500"


class TinyDecoder(nn.Module):
    """A hand-written decoder with a tuple cache: ``forward(ids, past_key_values=None)``."""

    def __init__(self, d: int = 32, vocab: int = 100) -> None:
        super().__init__()
        self.embed = nn.Embedding(vocab, d)
        self.qkv = nn.Linear(d, 3 * d, bias=False)
        self.head = nn.Linear(d, vocab, bias=False)

    def forward(
        self, input_ids: torch.Tensor, past_key_values: Any = None, use_cache: bool = True
    ) -> tuple[torch.Tensor, Any]:
        q, k, v = self.qkv(self.embed(input_ids)).chunk(3, dim=-1)
        if past_key_values is not None:
            k = torch.cat([past_key_values[0], k], dim=1)
            v = torch.cat([past_key_values[1], v], dim=1)
        att = torch.softmax(q @ k.transpose(1, 2), dim=-1) @ v
        return self.head(att), (k, v)


def _cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.mark.filterwarnings("ignore")
def test_json_has_the_documented_keys_and_equals_the_python_api(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, err = _cli(
        capsys,
        "llm",
        "hf:llama",
        "--arch",
        LLAMA,
        "--prompt",
        "16",
        "--context",
        "64",
        "--batch",
        "2",
        "--gpu",
        "h100-bf16",
        "--json",
    )
    assert code == 0, err
    data = json.loads(out)
    assert set(data["prefill"]) >= {"flops", "macs", "bytes"}
    assert set(data["decode"]) >= {
        "flops_per_token",
        "macs_per_token",
        "bytes_per_token",
        "arithmetic_intensity",
    }
    assert set(data["kv_cache"]) >= {"bytes_per_token", "bytes"}
    assert set(data["weights"]) >= {"bytes", "active_bytes"}
    arch = dict(kv.split("=") for kv in LLAMA.split(","))
    costs = profile_llm(
        "hf:llama",
        prompt=16,
        context=64,
        batch=2,
        machine="h100-bf16",
        **{k: int(v) for k, v in arch.items()},
    )
    assert data == costs.model_dump(mode="json")
    # 2 layers x K and V x 2 KV heads x 16 wide x 64 tokens x 2 sequences x 4 bytes.
    assert data["kv_cache"]["bytes"] == 2 * 2 * 2 * 16 * 64 * 2 * 4


def test_roofline_is_the_slower_of_bytes_and_flops_and_the_fit_is_exact() -> None:
    costs = profile_llm(
        "hf:llama",
        prompt=8,
        context=64,
        batch=4,
        machine="h100-bf16",
        memory_bytes=10**7,
        **_arch(),
    )
    r = costs.roofline
    assert r is not None
    h100 = MACHINES["h100-bf16"]
    step_flops = costs.decode.flops_per_token * 4
    step_bytes = costs.weights.active_bytes + costs.kv_cache.bytes
    assert r.step_bytes == step_bytes
    assert r.seconds_per_step == pytest.approx(
        max(step_bytes / h100.bandwidth, step_flops / h100.peak_flops)
    )
    assert r.tokens_per_s == pytest.approx(4 / r.seconds_per_step)
    assert r.bound == "memory-bound"  # 4 tokens a step: far below the H100's ridge
    per_sequence = costs.kv_cache.bytes // 4
    assert r.max_batch is not None and r.memory_bytes == 10**7
    assert costs.weights.bytes + r.max_batch * per_sequence <= 10**7
    assert costs.weights.bytes + (r.max_batch + 1) * per_sequence > 10**7


def _arch() -> dict[str, int]:
    return {k: int(v) for k, v in (kv.split("=") for kv in LLAMA.split(","))}


def test_a_hand_written_decoder_with_a_tuple_cache_is_measured_and_never_changed() -> None:
    model = TinyDecoder()
    before = {k: v.clone() for k, v in model.state_dict().items()}
    costs = profile_llm(model, prompt=8, context=40)
    assert costs.kv_cache.bytes == 2 * 32 * 40 * 4  # K and V, d = 32, 40 tokens, float32
    # Decode: qkv 32 x 96, scores and AV 2 x 32 x 40, head 32 x 100.
    assert costs.decode.macs_per_token == 32 * 96 + 2 * 32 * 40 + 32 * 100
    assert all(p.device.type == "cpu" for p in model.parameters())
    assert all(torch.equal(before[k], v) for k, v in model.state_dict().items())


def test_a_model_without_cache_support_is_named_with_what_it_lacks(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(ModelInputError, match="no KV-cache support") as info:
        profile_llm(nn.Sequential(nn.Embedding(10, 8), nn.Linear(8, 10)), context=8)
    assert "`cache` nor `past_key_values`" in str(info.value)
    code, _, err = _cli(capsys, "llm", "resnet18", "--context", "8")
    assert code == 2 and "resnet18: has no KV-cache support" in err


def test_a_forward_that_returns_no_cache_says_so() -> None:
    class Forgetful(TinyDecoder):
        def forward(  # type: ignore[override]
            self, input_ids: torch.Tensor, past_key_values: Any = None, use_cache: bool = True
        ) -> torch.Tensor:
            return super().forward(input_ids, past_key_values)[0]

    with pytest.raises(ModelInputError, match="returned no cache"):
        profile_llm(Forgetful(), prompt=4, context=8)


@pytest.mark.filterwarnings("ignore")
def test_a_context_beyond_the_positions_needs_allow_longer(
    capsys: pytest.CaptureFixture[str],
) -> None:
    gpt2 = "n_layer=1,n_embd=32,n_head=2,vocab_size=100,n_positions=64"
    code, _, err = _cli(
        capsys, "llm", "hf:gpt2", "--arch", gpt2, "--prompt", "8", "--context", "100"
    )
    assert code == 2
    assert "100 tokens is beyond the model's max_position_embeddings=64" in err
    assert "--allow-longer" in err
    code, out, err = _cli(
        capsys,
        "llm",
        "hf:gpt2",
        "--arch",
        gpt2,
        "--prompt",
        "8",
        "--context",
        "100",
        "--allow-longer",
        "--json",
    )
    assert code == 0, err
    assert json.loads(out)["kv_cache"]["bytes"] == 2 * 32 * 100 * 4


def test_bad_sizes_and_presets_are_refused(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(ModelInputError, match="context must be an integer >= 2"):
        profile_llm(TinyDecoder(), context=1)
    code, _, err = _cli(capsys, "llm", "hf:llama", "--gpu", "h100")
    assert code == 2 and "did you mean 'h100-bf16'" in err


def test_a_local_hugging_face_folder_is_profiled_like_the_name(tmp_path: Any) -> None:
    # A folder with only a config.json (what `save_pretrained` writes besides weights): the
    # folder's own class is built on meta and gives the figures of the same config by name.
    from transformers import LlamaConfig

    arch = {k: int(v) for k, v in (kv.split("=") for kv in LLAMA.split(","))}
    LlamaConfig(**arch).save_pretrained(tmp_path)
    assert [p.name for p in tmp_path.iterdir()] == ["config.json"]
    by_folder = profile_llm(f"hf:{tmp_path}", prompt=8, context=32)
    by_name = profile_llm("hf:llama", prompt=8, context=32, **arch)
    assert by_folder.kv_cache.bytes == 2 * 2 * 2 * 16 * 32 * 4  # layers x K,V x heads x width
    assert by_folder.decode == by_name.decode and by_folder.kv_cache == by_name.kv_cache
    assert by_folder.weights == by_name.weights
