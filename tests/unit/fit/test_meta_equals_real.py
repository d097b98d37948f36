"""The estimate without data equals the same step tracked on real CPU tensors, byte for byte.

Each model runs a training step (forward, backward, the optimizer's update) and, for some, an
inference step. ``estimate_memory`` runs it on fake CPU tensors (nothing allocated);
``measure_step_memory`` runs the same code on a real copy with the model's weights. Every
component of the breakdown, the peak and the moment of the peak must be equal.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import torch
import torchvision
from torch import nn
from torch.utils.checkpoint import checkpoint

from pytest_modelprof.fit import StepOptions, estimate_memory, measure_step_memory


class SmallCNN(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.body = nn.Sequential(
            nn.Conv2d(3, 8, 3, padding=1),
            nn.BatchNorm2d(8),
            nn.ReLU(),
            nn.Conv2d(8, 16, 3, stride=2, padding=1),
            nn.BatchNorm2d(16),
            nn.ReLU(),
            nn.AdaptiveAvgPool2d(1),
            nn.Flatten(),
            nn.Linear(16, 10),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.body(x)  # type: ignore[no-any-return]


class LSTMModel(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.embed = nn.Embedding(100, 16)
        self.lstm = nn.LSTM(16, 32, num_layers=2, batch_first=True)
        self.head = nn.Linear(32, 100)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        out, _ = self.lstm(self.embed(ids))
        return self.head(out)  # type: ignore[no-any-return]


class Checkpointed(nn.Module):
    """Each block's activations are recomputed in backward (torch.utils.checkpoint)."""

    def __init__(self) -> None:
        super().__init__()
        self.blocks = nn.ModuleList(
            nn.Sequential(nn.Linear(64, 256), nn.GELU(), nn.Linear(256, 64)) for _ in range(3)
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for block in self.blocks:
            x = x + checkpoint(block, x, use_reentrant=False)
        return x


def _vit() -> nn.Module:
    return torchvision.models.VisionTransformer(
        image_size=32,
        patch_size=8,
        num_layers=2,
        num_heads=2,
        hidden_dim=32,
        mlp_dim=64,
        num_classes=10,
    )


def _convnext() -> nn.Module:
    import timm

    return timm.create_model("convnext_atto", pretrained=False, num_classes=10)


def _gpt2() -> nn.Module:
    from transformers import GPT2Config, GPT2LMHeadModel

    return GPT2LMHeadModel(
        GPT2Config(n_layer=2, n_embd=32, n_head=2, vocab_size=100, n_positions=64)
    )


def _llama() -> nn.Module:
    from transformers import LlamaConfig, LlamaForCausalLM

    return LlamaForCausalLM(
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


def _mixtral() -> nn.Module:
    from transformers import MixtralConfig, MixtralForCausalLM

    return MixtralForCausalLM(
        MixtralConfig(
            num_hidden_layers=2,
            hidden_size=32,
            intermediate_size=64,
            num_attention_heads=4,
            num_key_value_heads=2,
            vocab_size=100,
            max_position_embeddings=64,
            num_local_experts=4,
            num_experts_per_tok=2,
        )
    )


def _image(size: int = 32, batch: int = 2) -> torch.Tensor:
    return torch.randn(batch, 3, size, size)


def _ids() -> dict[str, torch.Tensor]:
    return {"input_ids": torch.randint(0, 100, (2, 16))}


CASES: dict[str, tuple[Callable[[], nn.Module], Callable[[], Any], StepOptions]] = {
    "cnn-batchnorm-sgd-momentum": (SmallCNN, _image, StepOptions(optimizer="sgd-momentum")),
    "resnet50-adamw-foreach": (
        lambda: torchvision.models.resnet50(num_classes=10),
        _image,
        StepOptions(),
    ),
    "vit-adam-for-loop": (_vit, _image, StepOptions(optimizer="adam", optimizer_impl="for-loop")),
    "timm-convnext-adamw": (_convnext, _image, StepOptions()),
    "gpt2-adamw": (_gpt2, _ids, StepOptions()),
    "llama-adamw-for-loop": (_llama, _ids, StepOptions(optimizer_impl="for-loop")),
    "mixtral-adamw": (_mixtral, _ids, StepOptions()),
    "checkpointed-adamw": (Checkpointed, lambda: torch.randn(8, 64), StepOptions()),
    "resnet18-bf16-mixed": (
        lambda: torchvision.models.resnet18(num_classes=10),
        _image,
        StepOptions(precision="bf16-mixed"),
    ),
    "llama-bf16-mixed": (_llama, _ids, StepOptions(precision="bf16-mixed")),
    "resnet18-bf16": (
        lambda: torchvision.models.resnet18(num_classes=10),
        _image,
        StepOptions(precision="bf16", optimizer="sgd-momentum"),
    ),
    "gpt2-inference": (_gpt2, _ids, StepOptions(train=False)),
    "resnet50-inference-bf16-mixed": (
        lambda: torchvision.models.resnet50(num_classes=10),
        _image,
        StepOptions(train=False, precision="bf16-mixed"),
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_estimate_equals_the_real_step(case: str) -> None:
    build, make_inputs, options = CASES[case]
    torch.manual_seed(0)
    model, inputs = build(), make_inputs()
    real = measure_step_memory(model, inputs, options=options)
    est = estimate_memory(model, inputs=inputs, options=options)
    assert est.mode == "fake", est.notes
    assert est.breakdown == real.breakdown
    assert est.peak_bytes == real.peak_bytes == sum(real.breakdown.values())
    assert est.peak_at == real.peak_at
    if options.train:
        assert real.breakdown["gradients"] > 0
    if (
        options.train
        and options.optimizer in ("adam", "adamw")
        and real.peak_at.phase == "optimizer"
    ):
        assert real.breakdown["optimizer_state"] > 0


def test_lstm_differs_by_the_onednn_workspace_only() -> None:
    """Not exact, and why: on the CPU ``aten::mkldnn_rnn_layer`` returns a workspace whose size
    only oneDNN knows (57,344 elements here per layer); its meta kernel returns an empty one
    (cuDNN's reserve space on a GPU is alike). Bound: the estimate is lower than the real
    peak by at most the workspaces' bytes, and every other component is equal."""
    from pytest_modelprof._compat import TorchDispatchMode

    workspaces: list[int] = []

    class Workspaces(TorchDispatchMode):  # type: ignore[misc]
        def __torch_dispatch__(
            self, func: Any, types: Any, args: Any = (), kwargs: Any = None
        ) -> Any:
            out = func(*args, **(kwargs or {}))
            if "mkldnn_rnn_layer.default" in str(func):
                ws = out[3]
                workspaces.append(ws.numel() * ws.element_size())
            return out

    torch.manual_seed(0)
    model, ids = LSTMModel(), torch.randint(0, 100, (2, 12))
    options = StepOptions(optimizer="sgd")
    real = measure_step_memory(model, ids, options=options)
    est = estimate_memory(model, inputs=ids, options=options)
    with Workspaces():
        model(ids)
    assert len(workspaces) == 2 and all(w > 0 for w in workspaces)
    assert est.peak_bytes < real.peak_bytes <= est.peak_bytes + sum(workspaces)
    for key in ("parameters", "buffers", "inputs", "optimizer_state"):
        assert est.breakdown[key] == real.breakdown[key]


def test_meta_equals_real_without_attention() -> None:
    """Meta tensors run the same kernels as the CPU for convolutions and norms (not attention:
    meta takes the math path, the CPU a fused kernel, so attention models use fake tensors)."""
    torch.manual_seed(0)
    model, x = SmallCNN(), _image()
    options = StepOptions(optimizer="adam")
    real = measure_step_memory(model, x, options=options)
    meta = estimate_memory(model, inputs=x, options=options, mode="meta")
    assert meta.mode == "meta"
    assert meta.breakdown == real.breakdown and meta.peak_at == real.peak_at


def test_the_model_is_never_touched() -> None:
    torch.manual_seed(0)
    model = SmallCNN()
    before = {k: v.clone() for k, v in model.state_dict().items()}
    estimate_memory(model, input_shape=(2, 3, 32, 32))
    measure_step_memory(model, _image())
    assert all(torch.equal(before[k], v) for k, v in model.state_dict().items())
    assert all(p.grad is None for p in model.parameters())
    assert model.body[1].num_batches_tracked.item() == 0


def test_hf_checkpointing_equals_the_real_step() -> None:
    """transformers' own checkpointing (``activation_checkpointing_enable``, which turns the KV
    cache off): on real tensors transformers sees the positions are one plain sequence and
    passes no mask to attention; the estimate takes the same path (it once built the
    (batch, 1, seq, seq) mask per layer call and came out higher)."""
    torch.manual_seed(0)
    model, ids = _llama(), _ids()
    plain = StepOptions(optimizer="none")
    options = StepOptions(optimizer="none", checkpointing=True)
    real = measure_step_memory(model, ids, options=options)
    est = estimate_memory(model, inputs=ids, options=options)
    assert est.breakdown == real.breakdown and est.peak_at == real.peak_at
    assert (
        est.breakdown["activations"]
        < estimate_memory(model, inputs=ids, options=plain).breakdown["activations"]
    )
    assert not model.is_activation_checkpointing  # switched on in the copy that ran


def test_checkpointing_needs_the_models_own_switch() -> None:
    from pytest_modelprof.errors import ModelprofError

    with pytest.raises(ModelprofError, match="wrap its blocks in torch.utils.checkpoint"):
        estimate_memory(SmallCNN(), inputs=_image(), options=StepOptions(checkpointing=True))
