"""Reference models whose costs have a closed form: a LLaMA-style decoder in plain torch.

A public, documented module: check the engine yourself against arithmetic nobody here ran
(``closed_form(config, seq)`` gives parameters, MACs and FLOPs for ``LlamaDecoder(config)``).
The test suite uses it at toy size and the benchmarks at 70B on meta tensors. Attention is
written out (no fused kernel) so every elementwise op is visible in the formula.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

__all__: list[str] = []


@dataclass(frozen=True)
class LlamaConfig:
    vocab: int = 32000
    dim: int = 8192
    layers: int = 80
    heads: int = 64
    kv_heads: int = 8
    ffn: int = 28672
    max_seq: int = 4096
    eps: float = 1e-5

    @property
    def head_dim(self) -> int:
        return self.dim // self.heads

    @property
    def kv_dim(self) -> int:
        return self.kv_heads * self.head_dim


LLAMA_70B = LlamaConfig()


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float) -> None:
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


def _rotate_half(x: torch.Tensor) -> torch.Tensor:
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


class Attention(nn.Module):
    def __init__(self, cfg: LlamaConfig) -> None:
        super().__init__()
        self.cfg = cfg
        self.q_proj = nn.Linear(cfg.dim, cfg.dim, bias=False)
        self.k_proj = nn.Linear(cfg.dim, cfg.kv_dim, bias=False)
        self.v_proj = nn.Linear(cfg.dim, cfg.kv_dim, bias=False)
        self.o_proj = nn.Linear(cfg.dim, cfg.dim, bias=False)
        self.scale = cfg.head_dim**-0.5

    def forward(
        self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, mask: torch.Tensor
    ) -> torch.Tensor:
        b, t, _ = x.shape
        c = self.cfg
        q = self.q_proj(x).view(b, t, c.heads, c.head_dim).transpose(1, 2)
        k = self.k_proj(x).view(b, t, c.kv_heads, c.head_dim).transpose(1, 2)
        v = self.v_proj(x).view(b, t, c.kv_heads, c.head_dim).transpose(1, 2)
        q = q * cos + _rotate_half(q) * sin
        k = k * cos + _rotate_half(k) * sin
        rep = c.heads // c.kv_heads
        k = k.repeat_interleave(rep, dim=1)
        v = v.repeat_interleave(rep, dim=1)
        scores = (q @ k.transpose(-2, -1)) * self.scale + mask
        out = torch.softmax(scores, dim=-1) @ v
        projected: torch.Tensor = self.o_proj(out.transpose(1, 2).reshape(b, t, c.dim))
        return projected


class MLP(nn.Module):
    def __init__(self, cfg: LlamaConfig) -> None:
        super().__init__()
        self.gate_proj = nn.Linear(cfg.dim, cfg.ffn, bias=False)
        self.up_proj = nn.Linear(cfg.dim, cfg.ffn, bias=False)
        self.down_proj = nn.Linear(cfg.ffn, cfg.dim, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out: torch.Tensor = self.down_proj(nn.functional.silu(self.gate_proj(x)) * self.up_proj(x))
        return out


class Block(nn.Module):
    def __init__(self, cfg: LlamaConfig) -> None:
        super().__init__()
        self.attn_norm = RMSNorm(cfg.dim, cfg.eps)
        self.attn = Attention(cfg)
        self.mlp_norm = RMSNorm(cfg.dim, cfg.eps)
        self.mlp = MLP(cfg)

    def forward(
        self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, mask: torch.Tensor
    ) -> torch.Tensor:
        x = x + self.attn(self.attn_norm(x), cos, sin, mask)
        out: torch.Tensor = x + self.mlp(self.mlp_norm(x))
        return out


class LlamaDecoder(nn.Module):
    """Pre-norm decoder: RMSNorm, rotary embeddings, grouped-query attention, SwiGLU."""

    def __init__(self, cfg: LlamaConfig = LLAMA_70B) -> None:
        super().__init__()
        self.cfg = cfg
        self.embed = nn.Embedding(cfg.vocab, cfg.dim)
        self.layers = nn.ModuleList(Block(cfg) for _ in range(cfg.layers))
        self.norm = RMSNorm(cfg.dim, cfg.eps)
        self.lm_head = nn.Linear(cfg.dim, cfg.vocab, bias=False)
        pos = torch.arange(cfg.max_seq, dtype=torch.float32)
        inv = 1.0 / (
            10000 ** (torch.arange(0, cfg.head_dim, 2, dtype=torch.float32) / cfg.head_dim)
        )
        angles = torch.outer(pos, inv).repeat(1, 2)
        self.register_buffer("cos", angles.cos(), persistent=False)
        self.register_buffer("sin", angles.sin(), persistent=False)
        causal = torch.full((cfg.max_seq, cfg.max_seq), float("-inf")).triu(1)
        self.register_buffer("mask", causal, persistent=False)

    def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
        t = input_ids.shape[1]
        cos: torch.Tensor = self.cos[:t]  # type: ignore[index]
        sin: torch.Tensor = self.sin[:t]  # type: ignore[index]
        mask: torch.Tensor = self.mask[:t, :t]  # type: ignore[index]
        x = self.embed(input_ids)
        for layer in self.layers:
            x = layer(x, cos, sin, mask)
        logits: torch.Tensor = self.lm_head(self.norm(x))
        return logits


def closed_form(cfg: LlamaConfig, tokens: int, batch: int = 1) -> dict[str, int]:
    """Parameters, MACs and FLOPs of one forward over ``batch x tokens``, by hand.

    FLOPs follow the package's conventions (README): 2 per MAC; RMSNorm 4 per element + 2 per
    row (square, mean, x*r, *w; +eps and rsqrt per row); rotary 3.5 per element (2 mul, 1 add,
    negate half); attention scale, mask add 1 per score, softmax 5 per score; SiLU 5, the gate
    product 1, each residual add 1 per element.
    """
    d, f, v, h, hd = cfg.dim, cfg.ffn, cfg.vocab, cfg.heads, cfg.head_dim
    kv = cfg.kv_dim
    n = batch * tokens
    params = v * d + cfg.layers * (2 * d * d + 2 * d * kv + 3 * d * f + 2 * d) + d + d * v
    scores = batch * h * tokens * tokens
    layer_macs = n * (2 * d * d + 2 * d * kv + 3 * d * f) + 2 * scores * hd
    macs = cfg.layers * layer_macs + n * d * v
    norm = 4 * n * d + 2 * n
    rope = 7 * (n * d + n * kv) // 2
    layer_elementwise = 2 * norm + rope + scores * (1 + 1 + 5) + n * f * (5 + 1) + 2 * n * d
    flops = 2 * macs + cfg.layers * layer_elementwise + norm
    return {"params": params, "macs": macs, "flops": flops}
