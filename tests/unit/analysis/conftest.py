"""Profiles of real torchvision models, captured once per session (fake tensors: fast)."""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torchvision

from pytest_modelprof.profile import Profiled, profile_with_capture

# Small inputs keep the suite fast; ViT needs 224 (its position embedding fixes the patch grid).
SHAPES = {
    "resnet18": (1, 3, 64, 64),
    "mobilenet_v2": (1, 3, 64, 64),
    "vit_b_16": (1, 3, 224, 224),
}


@pytest.fixture(scope="session")
def zoo_profile() -> Callable[[str], Profiled]:
    """``zoo_profile("resnet18")``: the model's profile and capture, built and captured once."""
    cache: dict[str, Profiled] = {}

    def get(name: str) -> Profiled:
        if name not in cache:
            model = torchvision.models.get_model(name)
            cache[name] = profile_with_capture(model, input_shape=SHAPES[name], name=name)
        return cache[name]

    return get
