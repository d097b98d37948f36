"""How a named model is built for the capture: on meta when its builder allows, on the CPU
(then moved to meta, and said) when the builder reads weight values, and a builder that fails
is named with what to check."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_modelprof.errors import ModelBuildError
from pytest_modelprof.profile import profile_model

SOURCE = """
import torch.nn as nn


def reads_values(input_shape=None, width=8):
    m = nn.Linear(4, width)
    m.scale = float(m.weight.abs().max())  # a meta tensor has no value to read
    return m


def plain(input_shape=None, width=8):
    return nn.Linear(4, width)


def huge_reads_values(input_shape=None):
    m = nn.Linear(4, 4)
    m.scale = float(m.weight.abs().max())
    m.big = nn.Linear(32768, 32768)  # 4 GiB of fp32 weights: over the 2 GiB CPU fallback
    return m


def broken(input_shape=None, width=8):
    raise RuntimeError("the factory is broken")
"""


@pytest.fixture(autouse=True)
def _factories(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "buildfactories_mod.py").write_text(SOURCE)
    monkeypatch.syspath_prepend(str(tmp_path))


def test_a_builder_that_reads_values_is_built_on_the_cpu_and_counted_on_meta() -> None:
    p = profile_model("buildfactories_mod:reads_values", input_shape=(2, 4))
    plain = profile_model("buildfactories_mod:plain", input_shape=(2, 4))
    assert p.capture.mode == "meta"
    assert (p.total_flops, p.total_params) == (plain.total_flops, plain.total_params)
    # 2 rows x 4 x 8 = 64 MACs; 128 FLOPs + 16 bias adds.
    assert (p.total_macs, p.total_flops, p.total_params) == (64, 144, 4 * 8 + 8)
    assert "built on CPU and moved to meta (construction reads values" in p.capture.reason


def test_a_failing_builder_is_named_with_its_error() -> None:
    with pytest.raises(ModelBuildError) as info:
        profile_model("buildfactories_mod:broken", input_shape=(2, 4))
    text = str(info.value)
    assert "building the model failed: " in text and "the factory is broken" in text
    assert "The model's builder itself failed." in text


def test_a_failing_builder_with_arguments_says_to_check_them() -> None:
    with pytest.raises(ModelBuildError, match=r"Check the builder arguments \(\{'width': 3\}\)"):
        profile_model("buildfactories_mod:broken", input_shape=(2, 4), width=3)


def test_real_mode_builds_a_named_model_with_real_weights() -> None:
    p = profile_model("buildfactories_mod:reads_values", input_shape=(2, 4), mode="real")
    assert p.capture.mode == "real"
    assert p.total_macs == 64


def test_a_cpu_fallback_build_over_the_limit_is_stopped_before_allocating() -> None:
    with pytest.raises(ModelBuildError) as info:
        profile_model("buildfactories_mod:huge_reads_values", input_shape=(2, 4))
    text = str(info.value)
    assert text.startswith("buildfactories_mod:huge_reads_values: building on meta failed (")
    assert "and was stopped before allocating it" in text
    assert "mode='real'" in text  # what to do instead
