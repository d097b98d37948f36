"""Profiles of real torchvision models, captured once per session (fake tensors: fast)."""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torchvision

from pytest_modelprof.profile import profile_model
from pytest_modelprof.schema import ModelProfile

# Small inputs keep the suite fast; ViT needs 224 (its position embedding fixes the patch grid).
SHAPES = {
    "resnet18": (1, 3, 64, 64),
    "mobilenet_v2": (1, 3, 64, 64),
    "vit_b_16": (1, 3, 224, 224),
}


@pytest.fixture(scope="session")
def zoo_profile() -> Callable[[str], ModelProfile]:
    """``zoo_profile("resnet18")``: the model's profile, built and captured once."""
    cache: dict[str, ModelProfile] = {}

    def get(name: str) -> ModelProfile:
        if name not in cache:
            model = torchvision.models.get_model(name)
            cache[name] = profile_model(model, input_shape=SHAPES[name], name=name)
        return cache[name]

    return get
