"""What ``estimate_memory`` refuses before it runs anything, each error naming the culprit.

Also the largest-batch search where the line through two batches is wrong, and a model that
refuses the smallest batch.
"""

from __future__ import annotations

from typing import Any

import pytest
import torch
from torch import nn

from pytest_modelprof.errors import ModelBuildError, ModelInputError, ModelprofError, UsageError
from pytest_modelprof.fit import StepOptions, estimate_memory
from pytest_modelprof.fit.verdict import largest_batch


def _mlp() -> nn.Module:
    return nn.Sequential(nn.Linear(8, 8), nn.ReLU(), nn.Linear(8, 2))


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"mode": "real"}, ModelprofError, "mode must be 'auto', 'fake' or 'meta', not 'real'"),
        (
            {"mode": "meta", "options": StepOptions(precision="bf16-mixed")},
            ModelprofError,
            "precision 'bf16-mixed' runs the forward under autocast",
        ),
        ({"hidden_size": 4}, UsageError, r"unexpected keyword arguments: \['hidden_size'\]"),
        ({"batch": 0}, ModelInputError, "batch must be a whole number >= 1, got 0"),
        ({"seq_len": True}, ModelInputError, "seq_len must be a whole number >= 1, got True"),
        ({"input_shape": (2, 8), "seq_len": 4}, ModelInputError, "write the length into"),
        ({}, ModelInputError, "Sequential: no input given; pass input_shape="),
    ],
)
def test_a_module_estimate_refuses_what_it_cannot_use(
    kwargs: dict[str, Any], error: type[Exception], message: str
) -> None:
    with pytest.raises(error, match=message):
        estimate_memory(_mlp(), **kwargs)


def test_inputs_and_a_shape_together_are_refused() -> None:
    with pytest.raises(ModelInputError, match="give inputs= or a shape"):
        estimate_memory(_mlp(), inputs=torch.zeros(2, 8), batch=2)


def test_a_model_that_is_neither_a_module_nor_a_name_is_named_by_its_type() -> None:
    with pytest.raises(UsageError, match="not int"):
        estimate_memory(3)  # type: ignore[arg-type]


def test_a_named_model_that_does_not_build_on_meta_says_so() -> None:
    with pytest.raises(ModelBuildError, match="resnet18: building on meta failed"):
        estimate_memory("resnet18", num_classes="many")


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("checkpointing", "yes", "checkpointing must be True or False, got 'yes'"),
        ("device_count", 0, "device_count must be a whole number >= 1, got 0"),
        ("device_count", True, "device_count must be a whole number >= 1, got True"),
    ],
)
def test_step_options_refuse_a_bad_value_naming_it(field: str, value: object, message: str) -> None:
    with pytest.raises(ModelprofError, match=message):
        StepOptions(**{field: value})  # type: ignore[arg-type]


def test_the_search_gallops_past_a_line_that_underestimates_the_largest_batch() -> None:
    # 100 bytes a sample up to batch 2, then 10: the line through batches 1 and 2 predicts
    # 10 fit in 1000 bytes; 10 * 82 + 180 = 1000 is the true largest.
    def peak(b: int) -> int:
        return 100 * b if b <= 2 else 10 * b + 180

    assert largest_batch(peak, 1000) == 82


def test_a_model_that_refuses_batch_one_and_overflows_at_two_fits_no_batch() -> None:
    def peak(b: int) -> int:
        if b < 2:
            raise ValueError("Expected more than 1 value per channel when training")
        return 1000 * b

    assert largest_batch(peak, 1500, start=2) == 0
    assert largest_batch(peak, 2500, start=2) == 2
