"""The master-weights recipe: bf16 weights and gradients, fp32 master weights and Adam moments.

What DeepSpeed, Megatron-LM and FSDP's ``MixedPrecision`` users run. Per parameter: bf16
weights 2 + bf16 gradients 2 + fp32 master weights 4 + AdamW's ``exp_avg`` 4 and ``exp_avg_sq``
4, plus torch's 4-byte ``step`` per parameter tensor. ZeRO divides (the ZeRO paper's stages,
``/N`` rounded up): stage 1 the optimizer state, 2 + 2 + 12/N; stage 2 the gradients too,
2 + (2 + 12)/N; stage 3 everything, 16/N.
"""

from __future__ import annotations

import pytest
import torch

from pytest_modelprof.fit import StepOptions, estimate_memory, measure_step_memory

LLAMA_7B = {
    "num_hidden_layers": 32,
    "hidden_size": 4096,
    "intermediate_size": 11008,
    "num_attention_heads": 32,
    "num_key_value_heads": 32,
    "vocab_size": 32000,
}
LLAMA_70B = {
    "num_hidden_layers": 80,
    "hidden_size": 8192,
    "intermediate_size": 28672,
    "num_attention_heads": 64,
    "num_key_value_heads": 8,
    "vocab_size": 32000,
}


def _up(nbytes: int, n: int) -> int:
    return -(-nbytes // n)


@pytest.mark.parametrize("devices", [8, 64])
@pytest.mark.parametrize("shard", ["zero1", "zero2", "zero3"])
@pytest.mark.parametrize(("size", "arch"), [("7B", LLAMA_7B), ("70B", LLAMA_70B)])
def test_model_states_per_parameter(
    size: str, arch: dict[str, int], shard: str, devices: int
) -> None:
    options = StepOptions(precision="bf16-master", device_count=devices, shard=shard)
    est = estimate_memory("hf:llama", batch=1, seq_len=8, options=options, **arch)
    n = est.parameter_count
    tensors = 2 + 9 * arch["num_hidden_layers"] + 1  # embedding, head, 9 per layer, final norm
    # 7B: 6,738,415,616 parameters (LLaMA-2-7B); 70B: 68,976,648,192 (LLaMA-2-70B)
    assert n == {"7B": 6_738_415_616, "70B": 68_976_648_192}[size]
    weights, grads, state = 2 * n, 2 * n, 12 * n + 4 * tensors
    expected = {
        "zero1": {"parameters": weights, "gradients": grads},
        "zero2": {"parameters": weights, "gradients": _up(grads, devices)},
        "zero3": {"parameters": _up(weights, devices), "gradients": _up(grads, devices)},
    }[shard] | {"optimizer_state": _up(state, devices)}
    assert est.model_states == expected
    per_param = {"zero1": 2 + 2 + 12 / devices, "zero2": 2 + 14 / devices, "zero3": 16 / devices}
    assert sum(expected.values()) == pytest.approx(per_param[shard] * n, abs=4 * tensors)


def test_master_weights_step_equals_the_real_step() -> None:
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    model = LlamaForCausalLM(
        LlamaConfig(
            num_hidden_layers=2,
            hidden_size=32,
            intermediate_size=64,
            num_attention_heads=4,
            num_key_value_heads=2,
            vocab_size=100,
            max_position_embeddings=64,
        )
    )
    ids = {"input_ids": torch.randint(0, 100, (2, 16))}
    options = StepOptions(precision="bf16-master")
    real = measure_step_memory(model, ids, options=options)
    est = estimate_memory(model, inputs=ids, options=options)
    assert est.breakdown == real.breakdown and est.peak_at == real.peak_at
    n = sum(p.numel() for p in model.parameters())
    assert real.model_states["parameters"] == real.model_states["gradients"] == 2 * n
    # fp32 master weights (there before the step) + AdamW's two fp32 moments + step counters
    assert real.model_states["optimizer_state"] == 12 * n + 4 * len(list(model.parameters()))
    assert all(p.dtype == torch.float32 for p in model.parameters())  # the model is untouched


def test_the_recipe_is_named() -> None:
    from pytest_modelprof.fit.options import RECIPES

    est = estimate_memory(
        "hf:llama",
        batch=1,
        seq_len=8,
        options=StepOptions(precision="bf16-master"),
        num_hidden_layers=1,
        hidden_size=32,
        intermediate_size=64,
        num_attention_heads=4,
        num_key_value_heads=2,
        vocab_size=100,
    )
    assert est.recipe == RECIPES["bf16-master"]
    assert "fp32 master weights" in est.recipe and "bf16 weights" in est.recipe
