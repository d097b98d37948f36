"""UPPER_CASE names are constants: a session's metric set (a context's) changes none of them;
what follows the active set is reached through functions (``active_metrics()``,
``limit_names()``, ``growth_fields()``)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from types import ModuleType
from typing import Any

import pytest

from pytest_modelprof.baseline import metrics
from pytest_modelprof.baseline.metrics import BUILTIN_METRICS, Metric, active_metrics, use_metrics
from pytest_modelprof.baseline.tolerance import Exact
from pytest_modelprof.gate import limits

TOY = Metric(
    name="toy_tokens",
    label="toy tokens",
    getter=lambda p: len(p.layers),
    direction="lower",
    delta_key="max_toy_tokens_delta",
    default_delta=Exact(),
    formatter=lambda v: f"{v:g} tokens",
    growth_key="max_toy_tokens_growth",
    sweep_field="toy_tokens",
)


def _contents(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {k: _contents(v) for k, v in value.items()}
    if isinstance(value, Iterable) and not isinstance(value, (str, bytes)):
        return [_contents(v) for v in value]
    return value


def _constants(module: ModuleType) -> dict[str, Any]:
    return {
        name: _contents(getattr(module, name))
        for name in dir(module)
        if name.isupper() and not name.startswith("_")
    }


@pytest.mark.parametrize("module", [metrics, limits], ids=lambda m: m.__name__)
def test_no_upper_case_name_follows_the_session_metric_set(module: ModuleType) -> None:
    before = _constants(module)
    with use_metrics(BUILTIN_METRICS.with_metrics(TOY)):
        during = _constants(module)
    assert during == before


def test_the_live_set_is_reached_through_functions() -> None:
    from pytest_modelprof.baseline.metrics import growth_fields

    with use_metrics(BUILTIN_METRICS.with_metrics(TOY)):
        assert active_metrics().by_name("toy_tokens") is TOY
        assert "max_toy_tokens_delta" in limits.limit_names()
        assert growth_fields()["max_toy_tokens_growth"] == "toy_tokens"
    assert active_metrics().by_name("toy_tokens") is None
    assert "max_toy_tokens_delta" not in limits.limit_names()
