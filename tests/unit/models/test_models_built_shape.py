"""``ModelSpec.input_shape_for(module=...)``: ``--batch`` resizes the shape of the model as built,
so architecture kwargs that change the input (image size, positions) are kept."""

from __future__ import annotations

import pytest
import torch

from pytest_modelprof.errors import ModelNotFoundError
from pytest_modelprof.models import ModelSpec, resolve


def _spec(name: str) -> ModelSpec:
    try:
        return resolve(name)
    except ModelNotFoundError:
        pytest.skip("hf: model names are not available in this build")


def test_batch_of_a_vit_built_at_another_image_size() -> None:
    spec = _spec("hf:vit")
    with torch.device("meta"):
        module = spec.build(
            num_hidden_layers=1,
            hidden_size=32,
            num_attention_heads=2,
            intermediate_size=64,
            image_size=64,
            num_channels=1,
        )
    assert spec.input_shape_for(batch=2, module=module) == (2, 1, 64, 64)
    (pixels,), _ = spec.example_inputs(
        spec.input_shape_for(batch=2, module=module), device="meta", module=module
    )
    with torch.no_grad():
        module(pixels)  # the model accepts what it was given


def test_batch_of_a_bert_with_fewer_positions_than_the_default_length() -> None:
    spec = _spec("hf:bert")
    with torch.device("meta"):
        module = spec.build(
            num_hidden_layers=1,
            hidden_size=32,
            num_attention_heads=2,
            intermediate_size=64,
            max_position_embeddings=64,
        )
    # The default length, 128 tokens, is capped at the 64 positions this model has.
    assert spec.input_shape_for(batch=3, module=module) == (3, 64)


def test_without_a_module_the_registry_default_is_resized() -> None:
    spec = _spec("hf:vit")
    assert spec.default_input_shape is not None
    assert spec.input_shape_for(batch=2) == (2, *spec.default_input_shape[1:])
