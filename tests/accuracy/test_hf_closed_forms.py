"""Hugging Face transformers by name against closed forms written from the papers' shapes.

Every model is built by name (``hf:...``) from its transformers config class with random weights
on meta tensors and profiled in the default mode. MACs count the matrix multiplies: per token
and layer the projections, per layer the two attention products (``2 * heads * T^2 * head_dim``,
causal masks counted dense), and the head. Parameters are counted from the same shapes.
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from pytest_modelprof.profile import profile_model

pytest.importorskip("transformers")

T = 128  # the default sequence length of a text model: hf:NAME gets input_ids of (1, 128)


@dataclass(frozen=True)
class Decoder:
    """A LLaMA-family decoder: RMS norms, no biases, rotary positions, gated MLP, GQA."""

    vocab: int
    dim: int
    layers: int
    heads: int
    kv_heads: int
    ffn: int
    experts: int = 0  # Mixtral: experts per layer (0: a dense MLP)
    top_k: int = 0  # experts each token visits
    qkv_bias: bool = False  # Qwen2 adds biases to q, k and v
    tied: bool = False

    @property
    def kv_dim(self) -> int:
        return self.kv_heads * (self.dim // self.heads)

    def params(self) -> int:
        attn = 2 * self.dim * self.dim + 2 * self.dim * self.kv_dim
        if self.qkv_bias:
            attn += self.dim + 2 * self.kv_dim
        mlp = 3 * self.dim * self.ffn
        if self.experts:
            mlp = self.experts * mlp + self.dim * self.experts  # experts + router
        per_layer = attn + mlp + 2 * self.dim  # two RMS norm weights
        head = 0 if self.tied else self.vocab * self.dim
        return self.vocab * self.dim + self.layers * per_layer + self.dim + head

    def macs(self, tokens: int) -> int:
        proj = 2 * self.dim * self.dim + 2 * self.dim * self.kv_dim  # q, o; k, v (GQA: narrower)
        mlp = 3 * self.dim * self.ffn  # gate, up, down
        if self.experts:
            # Only the active experts: each token visits top_k of them; plus the router.
            mlp = self.top_k * mlp + self.dim * self.experts
        attention = 2 * tokens * tokens * self.dim  # QK^T and AV over all heads, dense
        return self.layers * (tokens * (proj + mlp) + attention) + tokens * self.dim * self.vocab


def _profile(name: str, **arch: object) -> tuple[int, int]:
    p = profile_model(name, **arch)  # type: ignore[arg-type]
    assert p.uncounted_ops == [], p.uncounted_ops
    return p.total_params, p.total_macs


def test_gpt2_small() -> None:
    # d = 768, 12 layers, vocab 50,257, 1,024 positions, LM head tied to the token embedding.
    d, layers, vocab, positions = 768, 12, 50_257, 1_024
    per_layer = (3 * d * d + 3 * d) + (d * d + d) + (4 * d * d + 4 * d) + (4 * d * d + d) + 4 * d
    params = vocab * d + positions * d + layers * per_layer + 2 * d
    assert params == 124_439_808  # OpenAI's "124M"
    macs = layers * (T * 12 * d * d + 2 * T * T * d) + T * d * vocab
    assert _profile("hf:gpt2") == (params, macs)  # 16.114 GMACs at 128 tokens


def test_bert_base() -> None:
    # BertModel: embeddings (word, 512 positions, 2 token types, LayerNorm), 12 layers, pooler.
    d, layers, vocab = 768, 12, 30_522
    per_layer = (3 * d * d + 3 * d) + (d * d + d) + 2 * d + (4 * d * d + 4 * d) + (4 * d * d + d)
    per_layer += 2 * d
    params = (vocab + 512 + 2) * d + 2 * d + layers * per_layer + (d * d + d)
    assert params == 109_482_240  # Google's "110M"
    # The pooler runs on the first token only: d * d.
    macs = layers * (T * 12 * d * d + 2 * T * T * d) + d * d
    assert _profile("hf:bert") == (params, macs)


def test_llama_with_grouped_query_attention() -> None:
    # LLaMA-3-8B's shape: 8 KV heads shared by 32 query heads.
    cfg = Decoder(vocab=128_256, dim=4_096, layers=32, heads=32, kv_heads=8, ffn=14_336)
    assert cfg.params() == 8_030_261_248  # Meta's "8B"
    arch = dict(
        vocab_size=cfg.vocab,
        hidden_size=cfg.dim,
        num_hidden_layers=cfg.layers,
        num_attention_heads=cfg.heads,
        num_key_value_heads=cfg.kv_heads,
        intermediate_size=cfg.ffn,
    )
    assert _profile("hf:llama", **arch) == (cfg.params(), cfg.macs(T))


def test_llama_default_config_is_llama2_7b() -> None:
    cfg = Decoder(vocab=32_000, dim=4_096, layers=32, heads=32, kv_heads=32, ffn=11_008)
    assert cfg.params() == 6_738_415_616  # LLaMA-2-7B
    assert _profile("hf:llama") == (cfg.params(), cfg.macs(T))


def test_mistral_7b() -> None:
    # MistralConfig's defaults are Mistral-7B: GQA with 8 KV heads; the 4,096-token sliding
    # window does not bind at 128 tokens.
    cfg = Decoder(vocab=32_000, dim=4_096, layers=32, heads=32, kv_heads=8, ffn=14_336)
    assert cfg.params() == 7_241_732_096
    assert _profile("hf:mistral") == (cfg.params(), cfg.macs(T))


def test_qwen2_biases_change_params_not_macs() -> None:
    cfg = Decoder(vocab=1_000, dim=256, layers=2, heads=8, kv_heads=2, ffn=512, qkv_bias=True)
    arch = dict(
        vocab_size=cfg.vocab,
        hidden_size=cfg.dim,
        num_hidden_layers=cfg.layers,
        num_attention_heads=cfg.heads,
        num_key_value_heads=cfg.kv_heads,
        intermediate_size=cfg.ffn,
        tie_word_embeddings=False,
    )
    # The bias adds are elementwise FLOPs, not MACs.
    assert _profile("hf:qwen2", **arch) == (cfg.params(), cfg.macs(T))


def test_vit_base_16() -> None:
    # ViTForImageClassification at 224 px: 196 patches + [CLS]; ViTConfig's default 2 labels.
    d, layers, tokens, labels = 768, 12, 197, 2
    per_layer = (3 * d * d + 3 * d) + (d * d + d) + (4 * d * d + 4 * d) + (4 * d * d + d) + 4 * d
    params = (3 * 16 * 16 * d + d) + d + tokens * d + layers * per_layer + 2 * d + (d * labels)
    params += labels
    patch_embed = 196 * d * 3 * 16 * 16
    macs = patch_embed + layers * (tokens * 12 * d * d + 2 * tokens * tokens * d) + d * labels
    assert _profile("hf:vit") == (params, macs)  # 85.80 M params, 17.56 GMACs


MIXTRAL = Decoder(
    vocab=32_000, dim=4_096, layers=32, heads=32, kv_heads=8, ffn=14_336, experts=8, top_k=2
)


def test_mixtral_closed_form_params_match_transformers() -> None:
    # Mixtral-8x7B: 46.7 B parameters, all experts counted (checks the closed form itself).
    import torch

    from pytest_modelprof.models import resolve

    assert MIXTRAL.params() == 46_702_792_704
    with torch.device("meta"):
        module = resolve("hf:mixtral").build()
    assert sum(p.numel() for p in module.parameters()) == MIXTRAL.params()


def test_mixtral_active_expert_macs_in_the_default_mode() -> None:
    # transformers 5's default experts kernel is one aten._grouped_mm over the routed tokens:
    # 2 of 8 experts per token, so 2 * 3 * d * ffn per token, plus the router's d * 8.
    assert _profile("hf:mixtral") == (MIXTRAL.params(), MIXTRAL.macs(T))
