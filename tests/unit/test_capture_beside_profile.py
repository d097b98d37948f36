"""The op capture a profile was made from travels beside the profile, never inside the document:
what a file keeps and what this process made are the same thing."""

from __future__ import annotations

from torch import nn

from pytest_modelprof.profile import profile_model
from pytest_modelprof.schema import ModelProfile


def test_a_profile_holds_nothing_a_json_load_loses() -> None:
    made = profile_model(nn.Linear(8, 4), input_shape=(2, 8), mode="meta")
    loaded = ModelProfile.from_json(made.to_json())
    # Nothing hides in the document beside its fields: no private capture that a load drops.
    assert made.__pydantic_private__ in (None, {})
    assert not hasattr(made, "capture_record")
    assert loaded == made and loaded.model_dump() == made.model_dump()


def test_the_capture_comes_beside_the_profile() -> None:
    from pytest_modelprof.profile import profile_with_capture

    made = profile_with_capture(nn.Linear(8, 4), input_shape=(2, 8), mode="meta")
    # The capture's ops are the profile's: the matmul's 2 * 8 * 4 MACs per row, 2 rows.
    assert sum(op.macs for op in made.capture.ops) == made.profile.total_macs == 2 * 8 * 4
    assert made.profile == profile_model(nn.Linear(8, 4), input_shape=(2, 8), mode="meta")
