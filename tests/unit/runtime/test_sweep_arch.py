"""Architecture sweeps: a builder keyword as an axis, with other builder keywords held fixed."""

from __future__ import annotations

import pytest
from torch import nn

from pytest_modelprof.runtime.sweep import sweep


def _mlp(layers: int = 1, width: int = 8) -> nn.Module:
    return nn.Sequential(*[nn.Linear(width, width) for _ in range(layers)])


def test_a_factory_axis_with_fixed_builder_kwargs() -> None:
    result = sweep(_mlp, over={"layers": [1, 2, 4]}, arch_kwargs={"width": 16},
                   input_shape=(2, 16), latency=False)
    series = result.series_for("layers")
    # 16*16 weights + 16 biases per layer
    assert [p.params for p in series.points] == [272, 544, 1088]
    assert result.exponent("layers") == pytest.approx(1.0, abs=1e-9)


def test_a_registry_name_rebuilt_per_value_with_fixed_kwargs() -> None:
    # torchvision's resnet18 builder takes num_classes; the fc layer grows with it.
    result = sweep("resnet18", over={"num_classes": [10, 20, 40]}, input_shape=(1, 3, 32, 32),
                   arch_kwargs={"zero_init_residual": True}, latency=False)
    points = result.series_for("num_classes").points
    assert [p.params - points[0].params for p in points] == [0, 10 * 513, 30 * 513]


def test_an_axis_given_twice_is_refused() -> None:
    with pytest.raises(ValueError, match="'layers' is both swept and fixed"):
        sweep(_mlp, over={"layers": [1, 2]}, arch_kwargs={"layers": 3}, input_shape=(2, 8))


def test_fixed_kwargs_need_something_to_build() -> None:
    with pytest.raises(ValueError, match="builder keywords"):
        sweep(_mlp(), over={"batch": [1, 2]}, arch_kwargs={"width": 3}, input_shape=(2, 8))


def test_a_single_value_holds_an_axis_without_sweeping_it() -> None:
    def tokens(layers: int = 1) -> nn.Module:
        return nn.Sequential(*[nn.Linear(8, 8) for _ in range(layers)])

    result = sweep(tokens, over={"layers": [1, 2, 4], "seq_len": [32]}, input_shape=(1, 4, 8),
                   latency=False)
    assert [s.axis for s in result.series] == ["layers"]
    assert result.base == {"layers": 1, "seq_len": 32}
    assert all(p.input_shapes == [[1, 32, 8]] for p in result.series[0].points)
    with pytest.raises(ValueError, match="at least one axis with two or more values"):
        sweep(tokens, over={"seq_len": [32]}, input_shape=(1, 4, 8))
