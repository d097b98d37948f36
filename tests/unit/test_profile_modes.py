"""Capture modes: auto finds a mode that works, says why, and classifies failures honestly.

Meta -> fake -> real for modules and for models built on meta;
the model's own error is the model's; a kernel limitation falls back; a bad input is named as
one; not every NotImplementedError needs real data; real weights are never allocated for a
fallback without a size check.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import torch
from torch import nn

from pytest_modelprof.capture import plan
from pytest_modelprof.errors import (
    ModelBuildError,
    ModelForwardError,
    ModelInputError,
    ModelprofError,
)
from pytest_modelprof.models import default_registry
from pytest_modelprof.profile import profile_model

transformers = pytest.importorskip("transformers", reason="the hf extra is not installed")


def _tiny(kind: str) -> nn.Module:
    """A randomly initialised Hugging Face model from its config class (no download)."""
    tf: Any = transformers
    if kind == "gpt2":
        return tf.GPT2LMHeadModel(tf.GPT2Config(n_layer=2, n_embd=64, n_head=4, vocab_size=1000))
    if kind == "bert":
        return tf.BertModel(
            tf.BertConfig(
                num_hidden_layers=2,
                hidden_size=64,
                num_attention_heads=4,
                intermediate_size=128,
                vocab_size=1000,
            )
        )
    return tf.LlamaForCausalLM(
        tf.LlamaConfig(
            num_hidden_layers=2,
            hidden_size=64,
            num_attention_heads=4,
            num_key_value_heads=2,
            intermediate_size=128,
            vocab_size=1000,
        )
    )


def _text_inputs(device: str = "cpu") -> dict[str, torch.Tensor]:
    ids = torch.randint(0, 1000, (2, 16), device=device)
    return {"input_ids": ids, "attention_mask": torch.ones(2, 16, dtype=torch.long, device=device)}


# -- attention masks, models built on meta ----------------------------------------------


@pytest.mark.parametrize("kind", ["gpt2", "bert", "llama"])
@pytest.mark.parametrize("built_on", ["cpu", "meta"])
def test_hf_models_with_an_attention_mask_profile_in_the_default_mode(
    kind: str, built_on: str
) -> None:
    # transformers' mask code calls .item(): meta tensors cannot, fake tensors can.
    with torch.device(built_on):
        model = _tiny(kind).eval()
    p = profile_model(model, inputs=_text_inputs())
    assert p.capture.mode == "fake"
    assert [a.partition(":")[0] for a in p.capture.attempts] == ["meta"]
    assert "item()" in p.capture.reason
    assert p.total_params == sum(t.numel() for t in model.parameters())
    # The mask changes no matmul: MACs equal the profile without a mask (which runs on meta).
    no_mask = profile_model(model, inputs={"input_ids": _text_inputs()["input_ids"]})
    assert no_mask.capture.mode == "meta"
    assert p.total_macs == no_mask.total_macs > 0


@pytest.mark.parametrize("kind", ["gpt2", "bert", "llama"])
@pytest.mark.parametrize("masked", [False, True])
def test_fake_and_real_tensors_count_the_same_flops(kind: str, masked: bool) -> None:
    # transformers reads an attention mask's values (no padding: no mask is built); on fake
    # tensors it could not, built the mask, and counted its ops too.
    model = _tiny(kind).eval()
    inputs = _text_inputs() if masked else {"input_ids": _text_inputs()["input_ids"]}
    fake = profile_model(model, inputs=inputs, mode="fake")
    real = profile_model(model, inputs=inputs, mode="real")
    assert (fake.total_flops, fake.total_macs) == (real.total_flops, real.total_macs)
    assert fake.total_traffic == real.total_traffic


def test_an_encoder_decoders_own_mask_counts_the_same_on_fake_tensors() -> None:
    # BART's decoder makes a mask of ones itself and checks it: no input mask is needed.
    tf: Any = transformers
    config = tf.BartConfig(
        encoder_layers=1,
        decoder_layers=1,
        d_model=64,
        encoder_attention_heads=4,
        decoder_attention_heads=4,
        encoder_ffn_dim=128,
        decoder_ffn_dim=128,
        vocab_size=1000,
    )
    model = tf.BartForConditionalGeneration(config).eval()
    ids = torch.randint(4, 1000, (1, 16))
    inputs = {"input_ids": ids, "decoder_input_ids": ids}
    fake = profile_model(model, inputs=inputs, mode="fake")
    real = profile_model(model, inputs=inputs, mode="real")
    assert fake.total_flops == real.total_flops


def test_meta_only_failure_suggests_fake() -> None:
    with torch.device("meta"):
        model = _tiny("gpt2").eval()
    with pytest.raises(ModelprofError, match=r"mode='fake'") as info:
        profile_model(model, inputs=_text_inputs(), mode="meta")
    assert "item()" in str(info.value)


class ReadsAWeightValue(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(8, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.lin(x)
        return h * 2 if h.sum().item() > 0 else h  # a value of the weights: real tensors only


def test_a_meta_failure_suggests_only_a_mode_that_runs_the_model() -> None:
    with pytest.raises(ModelprofError) as info:
        profile_model(ReadsAWeightValue(), input_shape=(2, 8), mode="meta")
    message = str(info.value)
    assert "mode='fake'" not in message  # fake tensors have no weight values either
    assert "mode='real'" in message
    with pytest.raises(ModelprofError, match="could not be profiled in fake mode"):
        profile_model(ReadsAWeightValue(), input_shape=(2, 8), mode="fake")
    assert profile_model(ReadsAWeightValue(), input_shape=(2, 8), mode="real").total_macs > 0


# -- the model's own error, bad input, kernel limits, engine limits --------------------


class Broken(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(8, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.lin(x)
        if h.dim() == 2:
            raise KeyError("no such expert: 'fc3'")  # the model's own bug
        return h


def test_the_models_own_error_is_reported_as_the_models() -> None:
    with pytest.raises(ModelForwardError) as info:
        profile_model(Broken(), input_shape=(4, 8))
    text = str(info.value)
    assert "KeyError" in text and "no such expert" in text
    assert "test_profile_modes.py" in text and 'raise KeyError("no such expert' in text
    assert "rejected input" not in text
    assert "tried before" not in text  # no fallback: another mode cannot fix the model


def test_a_shape_mismatch_at_the_first_layer_is_a_bad_input() -> None:
    import torchvision

    with pytest.raises(ModelInputError) as info:
        profile_model(torchvision.models.resnet18(), input_shape=(1, 4, 64, 64))
    text = str(info.value)
    assert "rejected input (1, 4, 64, 64)" in text and "'conv1' (Conv2d)" in text
    assert "tried before" not in text  # the real kernel refuses it too: no fallback


@torch.library.custom_op("modelprof_test::half_only_on_meta", mutates_args=())
def half_only_on_meta(x: torch.Tensor) -> torch.Tensor:
    """Real kernel: any float dtype. Its meta kernel takes half types only (like aten._grouped_mm
    on torch 2.14: "Expected mat_a to be BFloat16 ...")."""
    return x * 2


@half_only_on_meta.register_fake
def _(x: torch.Tensor) -> torch.Tensor:
    if x.dtype not in (torch.float16, torch.bfloat16):
        raise RuntimeError(f"Expected x to be BFloat16 or Float16, got {x.dtype}")
    return torch.empty_like(x)


class HalfOnlyOnMeta(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(16, 16)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return half_only_on_meta(self.lin(x))  # type: ignore[no-any-return]


def test_a_kernel_limitation_falls_back_to_real_tensors() -> None:
    p = profile_model(HalfOnlyOnMeta(), input_shape=(8, 16))
    assert p.capture.mode == "real"
    first, second = p.capture.attempts
    assert first.startswith("meta:") and "half_only_on_meta" in first and "refuses" in first
    assert second.startswith("fake: skipped")  # fake tensors run the same meta kernel
    assert p.total_macs == 8 * 16 * 16


def test_flex_attention_is_not_mistaken_for_data_dependence() -> None:
    from torch.nn.attention.flex_attention import flex_attention

    class Flex(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.q = nn.Linear(16, 16)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            q = self.q(x).view(1, 2, 8, 8)
            return flex_attention(q, q, q)  # type: ignore[no-any-return]

    with pytest.warns(UserWarning), pytest.raises(ModelprofError) as info:
        profile_model(Flex(), input_shape=(1, 8, 16))
    text = str(info.value)
    assert not isinstance(info.value, ModelInputError)  # not "rejected input"
    assert "flex_attention" in text and "pytest-modelprof cannot capture" in text


@pytest.mark.parametrize("mode", ["meta", "fake", "real"])
def test_lazy_layers_profile_in_every_mode(mode: str) -> None:
    # The layers get their shapes from the first input, in every mode alike.
    model = nn.Sequential(nn.LazyLinear(16), nn.ReLU(), nn.LazyBatchNorm1d(), nn.LazyLinear(4))
    p = profile_model(model, input_shape=(2, 8), mode=mode)  # type: ignore[arg-type]
    assert p.capture.mode == mode
    assert p.total_macs == 2 * (8 * 16 + 16 * 4)
    assert p.total_params == 8 * 16 + 16 + 2 * 16 + 16 * 4 + 4
    assert isinstance(model[0], nn.LazyLinear)  # the user's module is still lazy
    trained = profile_model(model, input_shape=(2, 8), mode=mode, include_backward=True)  # type: ignore[arg-type]
    assert trained.backward_macs > 0 and trained.total_params == p.total_params


# -- no real weights for a fallback without a size check ---------------------------------


class NeedsValues(nn.Module):
    """A data-dependent forward over 4 MiB of weights."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(1024, 1024)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.lin(x)
        return h[h > 0].sum()


class ReadsValuesWhenBuilt(nn.Module):
    """Its constructor reads a tensor's value, so it cannot be built on meta."""

    def __init__(self) -> None:
        super().__init__()
        width = int(torch.tensor([1024.0]).sum().item())  # NB: torch.tensor, not host math
        self.lin = nn.Linear(width, width)
        self.w = nn.Parameter(torch.empty(width, width).uniform_().round())

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.lin(x)


@pytest.fixture
def small_limit(monkeypatch: pytest.MonkeyPatch) -> Iterator[int]:
    limit = 2**20  # 1 MiB: both models above need 4 MiB and more
    monkeypatch.setattr(plan, "REAL_FALLBACK_LIMIT_BYTES", limit)
    yield limit


@pytest.fixture
def registered() -> Iterator[None]:
    default_registry.register("modelprof_test_needs_values", NeedsValues, input_shape=(2, 1024))
    default_registry.register(
        "modelprof_test_reads_values", ReadsValuesWhenBuilt, input_shape=(2, 1024)
    )
    yield
    default_registry.unregister("modelprof_test_needs_values")
    default_registry.unregister("modelprof_test_reads_values")


@pytest.mark.usefixtures("registered")
def test_a_named_models_real_fallback_is_size_checked(small_limit: int) -> None:
    with pytest.raises(ModelBuildError, match=r"4\.2 MB of weights.*mode='real'") as info:
        profile_model("modelprof_test_needs_values")
    assert "more than the 1.05 MB" in str(info.value)
    p = profile_model("modelprof_test_needs_values", mode="real")  # asked for: allowed
    assert p.capture.mode == "real" and p.total_macs == 2 * 1024 * 1024


@pytest.mark.usefixtures("registered")
def test_a_builder_that_fails_on_meta_is_not_rebuilt_in_full(small_limit: int) -> None:
    with pytest.raises(ModelBuildError, match=r"stopped before allocating it") as info:
        profile_model("modelprof_test_reads_values")
    assert "torch.device('meta')" in str(info.value)


def test_a_module_built_on_meta_gets_real_tensors_only_within_the_limit(
    small_limit: int,
) -> None:
    with torch.device("meta"):
        model = NeedsValues()
    with pytest.raises(ModelBuildError, match=r"mode='real'"):
        profile_model(model, input_shape=(2, 1024))
    p = profile_model(model, input_shape=(2, 1024), mode="real")
    assert p.capture.mode == "real" and "random weights" in p.capture.reason
    assert model.lin.weight.is_meta  # the user's module is still on meta


def test_a_modules_real_fallback_copies_its_weights_only_within_the_limit(
    small_limit: int,
) -> None:
    # Seen before: real tensors clone a module's real weights; auto did so at any size.
    model = NeedsValues()  # 4 MiB of real weights, a forward that needs their values
    with pytest.raises(ModelBuildError, match=r"copy its 4\.2 MB of weights") as info:
        profile_model(model, input_shape=(2, 1024))
    message = str(info.value)
    assert "more than the 1.05 MB" in message
    assert "mode='real'" in message
    assert "mode='fake'" not in message  # it fails the same way: boolean indexing on weights
    assert "tried before: meta:" in message  # the fallback was what needed the copy
    p = profile_model(model, input_shape=(2, 1024), mode="real")  # asked for: allowed
    assert p.capture.mode == "real" and p.total_macs == 2 * 1024 * 1024
    assert not model.lin.weight.is_meta and model.lin.weight.grad is None


def test_a_measurements_copy_of_a_module_is_size_checked(small_limit: int) -> None:
    # Timing, fvcore and compile health run a copy with the module's weights: same 2 GiB rule.
    from pytest_modelprof.profile import real_model_and_inputs

    model = NeedsValues()
    with pytest.raises(ModelBuildError, match=r"the latency measurement runs a copy") as info:
        real_model_and_inputs(model, input_shape=(2, 1024), purpose="the latency measurement")
    assert "4.2 MB" in str(info.value) and "model='pkg.module:factory'" in str(info.value)
    small = nn.Linear(4, 4)
    copy, _ = real_model_and_inputs(small, input_shape=(1, 4))
    assert copy is not small and copy.weight is not small.weight
    assert torch.equal(copy.weight, small.weight)  # the user's weights, copied


def test_a_value_dependent_shape_skips_fake_tensors() -> None:
    # Boolean indexing sizes its output from the values (nonzero): fake tensors cannot either.
    p = profile_model(NeedsValues(), input_shape=(2, 1024))
    assert p.capture.mode == "real"
    first, second = p.capture.attempts
    assert first.startswith("meta:") and "nonzero" in first
    assert second.startswith("fake: skipped")
    assert p.capture.reason.startswith("fell back to real tensors: meta:")


def test_mixtral_grouped_experts_fall_back_in_the_default_mode() -> None:
    # Transformers' grouped experts kernel (aten._grouped_mm) on float32, which torch's meta
    # kernel refuses.
    tf: Any = transformers
    config = tf.MixtralConfig(
        num_hidden_layers=1,
        hidden_size=64,
        num_attention_heads=4,
        num_key_value_heads=2,
        intermediate_size=128,
        vocab_size=1000,
        num_local_experts=4,
        num_experts_per_tok=2,
    )
    for built_on in ("cpu", "meta"):
        with torch.device(built_on):
            model = tf.MixtralForCausalLM(config).eval()
        p = profile_model(model, inputs={"input_ids": torch.randint(0, 1000, (1, 16))})
        # torch 2.14's meta kernel of aten._grouped_mm takes half types only; our own shape
        # rule takes over there, so meta works on every torch.
        assert p.capture.mode == "meta", (built_on, p.capture.attempts)
        assert p.total_params == sum(t.numel() for t in model.parameters())


def test_a_broken_cost_formula_is_reported_as_ours() -> None:
    from pytest_modelprof.costs import default_registry as default_costs

    def broken(args: Any, out: Any) -> Any:
        return args["interpolation_mode"]  # an argument aten.addmm does not have

    registry = default_costs().copy()
    registry._entries.pop("aten::addmm")
    registry.add(torch.ops.aten.addmm, broken, family="matmul")
    with pytest.raises(ModelprofError) as info:
        profile_model(nn.Linear(4, 4), input_shape=(2, 4), registry=registry)
    text = str(info.value)
    assert not isinstance(info.value, ModelInputError) and "rejected input" not in text
    assert "pytest-modelprof" in text and "aten.addmm" in text and "KeyError" in text


# Every mixture-of-experts decoder by name, in float32, on meta tensors.
# Small widths: d 64, 4 heads of 16 (2 KV heads), 4 experts of 32, 2 per token, 16 tokens.
_MOE_ARCH: dict[str, dict[str, int]] = {
    "hf:mixtral": {"num_local_experts": 4, "intermediate_size": 32},
    "hf:qwen2_moe": {
        "num_experts": 4,
        "moe_intermediate_size": 32,
        "shared_expert_intermediate_size": 48,
    },
    "hf:qwen3_moe": {"num_experts": 4, "moe_intermediate_size": 32},
    "hf:olmoe": {"num_experts": 4, "intermediate_size": 32},
}


@pytest.mark.parametrize("name", sorted(_MOE_ARCH))
def test_moe_decoders_by_name_profile_on_meta_with_active_expert_macs(name: str) -> None:
    arch = dict(
        num_hidden_layers=2,
        hidden_size=64,
        num_attention_heads=4,
        num_key_value_heads=2,
        num_experts_per_tok=2,
        vocab_size=1000,
        **_MOE_ARCH[name],
    )
    p = profile_model(name, input_shape=(1, 16), **arch)  # type: ignore[arg-type]
    assert p.capture.mode == "meta", p.capture.attempts
    assert p.uncounted_ops == []
    t, d, kv, ffn, experts = 16, 64, 2 * 16, 32, 4
    attention = 2 * d * d + 2 * d * kv  # q, o; k, v
    scores = 2 * 4 * t * t * 16  # q @ k^T and p @ v over 4 heads of 16
    moe = d * experts + 2 * 3 * d * ffn  # router, then gate/up/down of the 2 active experts
    if name == "hf:qwen2_moe":
        moe += 3 * d * 48 + d  # the shared expert and its one-output gate
    # 2 layers; the LM head reads every token (1000-word vocabulary).
    assert p.total_macs == 2 * (t * (attention + moe) + scores) + t * d * 1000
    # The same counts on fake tensors, where the same kernel refuses float32 on torch 2.14.
    assert profile_model(name, input_shape=(1, 16), mode="fake", **arch).total_macs == (  # type: ignore[arg-type]
        p.total_macs
    )
