"""The estimate of a training step against ``torch.cuda.max_memory_allocated`` of the real step.

Run on a machine with a GPU: ``MODELPROF_GPU_RECORD=fit.jsonl python -m pytest
tests/gpu/test_memory_fit_gpu.py -q`` keeps, per model, the estimate, the measured peak and
the gap (what explains it: the CUDA caching allocator's 512-byte rounding, cuBLAS/cuDNN
workspaces, CUDA's own attention kernels, CUDA autocast lists; the CUDA context is not in
``max_memory_allocated``). The model states must agree exactly: they are tensors, and the
estimate counts the same ones. Skipped cleanly without CUDA.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch
import torchvision
from gpu_support import GPU, record
from torch import nn

from pytest_modelprof._tensors import default_loss, flat_tensors
from pytest_modelprof.fit import StepOptions, estimate_memory
from pytest_modelprof.runtime.memory import storage_bytes

pytestmark = GPU


def _gpt2() -> nn.Module:
    from transformers import GPT2Config, GPT2LMHeadModel

    return GPT2LMHeadModel(GPT2Config(n_layer=4, n_embd=256, n_head=4, vocab_size=1000))


def _llama() -> nn.Module:
    from transformers import LlamaConfig, LlamaForCausalLM

    return LlamaForCausalLM(
        LlamaConfig(
            num_hidden_layers=4,
            hidden_size=256,
            intermediate_size=512,
            num_attention_heads=4,
            num_key_value_heads=2,
            vocab_size=1000,
        )
    )


MODELS: dict[str, tuple[Callable[[], nn.Module], Callable[[], object]]] = {
    "resnet50": (lambda: torchvision.models.resnet50(), lambda: torch.randn(8, 3, 224, 224)),
    "vit_b_16": (lambda: torchvision.models.vit_b_16(), lambda: torch.randn(4, 3, 224, 224)),
    "convnext_tiny": (
        lambda: torchvision.models.convnext_tiny(),
        lambda: torch.randn(4, 3, 224, 224),
    ),
    "gpt2-small-config": (_gpt2, lambda: {"input_ids": torch.randint(0, 1000, (4, 256))}),
    "llama-small-config": (_llama, lambda: {"input_ids": torch.randint(0, 1000, (4, 256))}),
}


@pytest.mark.parametrize("name", sorted(MODELS))
def test_estimate_against_the_caching_allocator(name: str) -> None:
    build, make_inputs = MODELS[name]
    torch.manual_seed(0)
    model, inputs = build(), make_inputs()
    options = StepOptions(optimizer="adamw", optimizer_impl="foreach")
    est = estimate_memory(model, inputs=inputs, options=options)

    cuda = model.to("cuda").train()
    batch = {k: v.cuda() for k, v in inputs.items()} if isinstance(inputs, dict) else inputs.cuda()  # type: ignore[union-attr]
    opt = torch.optim.AdamW(cuda.parameters(), lr=1e-3, foreach=True)
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    out = cuda(**batch) if isinstance(batch, dict) else cuda(batch)
    loss = default_loss(out)
    del out
    loss.backward()
    del loss
    opt.step()
    torch.cuda.synchronize()
    peak = torch.cuda.max_memory_allocated()

    params = list(cuda.parameters())
    state = [t for s in opt.state.values() for t in flat_tensors(dict(s)) if t.is_cuda]
    steps = sum(1 for s in opt.state.values() for t in flat_tensors(dict(s)) if not t.is_cuda)
    assert est.model_states["parameters"] == storage_bytes(params)
    assert est.model_states["gradients"] == storage_bytes([p.grad for p in params])
    # torch keeps AdamW's fp32 ``step`` on the CPU unless fused/capturable: 4 bytes per tensor
    assert est.model_states["optimizer_state"] == storage_bytes(state) + 4 * steps
    record(
        f"fit:{name}",
        estimate=est.peak_bytes,
        measured=peak,
        gap=peak - est.peak_bytes,
        gap_pct=round(100 * (peak - est.peak_bytes) / peak, 2),
        peak_at=est.peak_at.model_dump(),
    )
