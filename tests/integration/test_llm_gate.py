"""The marker's ``llm=``: KV-cache bytes, decode and prefill FLOPs gated like every metric.

The regression it exists for: a decoder that goes from grouped-query attention (8 KV heads) back
to full multi-head attention (64) multiplies its KV cache by 8 while a 128-token forward's FLOPs
move by a few percent, so ``max_flops_delta=0.1`` passes and ``max_kv_cache_delta=0.1``
fails. The decoder is a local transformers folder (``hf:tiny``: a config.json, random weights on
meta), real engine, subprocess runs.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("transformers")

pytestmark = pytest.mark.slow

TESTS = """
import pytest
import torch
from torch import nn


@pytest.mark.profile(
    model="hf:tiny",
    llm={"prompt": 64, "context": 512, "batch": 1},
    max_kv_cache_delta=0.1,
    # Every count of the forward and of serving within 10 %: only the cache may fail.
    max_flops_delta=0.1,
    max_macs_delta=0.1,
    max_params_delta=0.1,
    max_traffic_delta=0.1,
    max_decode_flops_delta=0.1,
    max_prefill_flops_delta=0.1,
)
def test_serving_cost():
    pass


@pytest.mark.profile(model="hf:tiny", name="budget", llm={"context": 256}, max_kv_cache="1KB")
def test_kv_budget():
    pass


class Tiny(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(100, 32)
        self.qkv = nn.Linear(32, 96, bias=False)

    def forward(self, input_ids, past_key_values=None):
        q, k, v = self.qkv(self.embed(input_ids)).chunk(3, dim=-1)
        if past_key_values is not None:
            k = torch.cat([past_key_values[0], k], dim=1)
            v = torch.cat([past_key_values[1], v], dim=1)
        return torch.softmax(q @ k.transpose(1, 2), dim=-1) @ v, (k, v)


@pytest.mark.profile(llm={"prompt": 4, "context": 16}, max_decode_flops="1K")
def test_fixture_decoder(modelprof):
    modelprof(Tiny(), inputs={"input_ids": torch.zeros(1, 4, dtype=torch.long)})


class PrefixRedone(Tiny):
    # The slip: each decode step also attends every cached token to every other one.
    def forward(self, input_ids, past_key_values=None):
        out, (k, v) = super().forward(input_ids, past_key_values)
        return out + (torch.softmax(k @ k.transpose(1, 2), dim=-1) @ v)[:, -1:], (k, v)


@pytest.mark.profile(
    llm={"prompt": 4, "context": [16, 32, 64]}, max_decode_flops_growth=1.2
)
def test_decode_growth(modelprof):
    modelprof(PrefixRedone(), inputs={"input_ids": torch.zeros(1, 4, dtype=torch.long)})
"""


def _config(root: Path, kv_heads: int) -> None:
    # d = 512 in 64 heads of 8; the MLP and the 32k-vocabulary head dominate a forward's FLOPs.
    config = {
        "model_type": "llama",
        "architectures": ["LlamaForCausalLM"],
        "hidden_size": 512,
        "num_attention_heads": 64,
        "num_key_value_heads": kv_heads,
        "num_hidden_layers": 2,
        "intermediate_size": 4096,
        "vocab_size": 32000,
        "max_position_embeddings": 4096,
    }
    folder = root / "tiny"
    folder.mkdir(exist_ok=True)
    (folder / "config.json").write_text(json.dumps(config))


def _forward_flops(root: Path) -> int:
    from pytest_modelprof.profile import profile_model

    return profile_model(f"hf:{root / 'tiny'}").total_flops


def test_gqa_to_mha_fails_the_kv_cache_limit_not_the_flops_limit(
    pytester: pytest.Pytester,
) -> None:
    root = pytester.path
    pytester.makepyfile(test_serving=TESTS)
    _config(root, kv_heads=8)
    gqa_flops = _forward_flops(root)
    result = pytester.runpytest_subprocess("--modelprof-update-baselines")
    result.assert_outcomes(passed=1, failed=3)
    # Budgets hold without a baseline: 2 layers x (K, V) x 8 heads x 8 x 256 tokens x 4 B; a
    # module given to the fixture inherits the marker's llm= (qkv alone is 6.1 KFLOPs); and a
    # decode step that redoes its prefix grows faster than linearly over a context sweep.
    result.stdout.fnmatch_lines_random(
        [
            "*KV cache: 262 KB is over budget max_kv_cache=1 KB*",
            "*decode FLOPs/token: * is over budget max_decode_flops=1 KFLOPs*",
            "*decode FLOPs growth: 1.* is over budget "
            "max_decode_flops_growth=1.2*",
        ]
    )
    stored = json.loads((root / "baselines/test_serving/test_serving_cost.json").read_text())
    assert stored["metrics"]["kv_cache"] == 2 * 2 * 8 * 8 * 512 * 4
    assert stored["measured"]["llm"]["kv_cache"]["bytes"] == stored["metrics"]["kv_cache"]

    _config(root, kv_heads=64)  # grouped-query -> full multi-head attention
    mha_flops = _forward_flops(root)
    assert 1 < mha_flops / gqa_flops < 1.1  # the 128-token forward barely moves
    result = pytester.runpytest_subprocess("test_serving.py::test_serving_cost")
    result.assert_outcomes(failed=1)
    # 8x the cache: +700 %, over the 10 % limit; FLOPs within their 10 % pass.
    result.stdout.fnmatch_lines(
        [
            "*test_serving_cost regressed against*(1 problem)*",
            "*KV cache: 524 KB → 4.19 MB (+700.0 %, limit +10.0 %)*",
        ]
    )
    problems = [line for line in result.stdout.lines if "%, limit" in line]
    assert len(problems) == 1, problems
