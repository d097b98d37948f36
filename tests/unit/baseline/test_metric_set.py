"""The metric set is chosen per context (a session, a test), never by changing a shared table."""

from __future__ import annotations

import threading

import pytest

from pytest_modelprof.baseline.metrics import (
    BUILTIN_METRICS,
    Metric,
    active_metrics,
    extended_metrics,
    growth_fields,
    growth_labels,
    use_metrics,
)
from pytest_modelprof.baseline.tolerance import Exact
from pytest_modelprof.gate.limits import Limits
from pytest_modelprof.gate.marker import resolve_marker

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


def test_a_borrowed_metric_is_not_seen_by_another_thread() -> None:
    inside, done = threading.Event(), threading.Event()

    def borrow() -> None:
        with extended_metrics(TOY):
            inside.set()
            done.wait(5)

    worker = threading.Thread(target=borrow)
    worker.start()
    assert inside.wait(5)
    try:
        # Another thread (an xdist worker's, a second session's) keeps its own metric set.
        seen = (
            active_metrics().by_name("toy_tokens"),
            "max_toy_tokens_delta" in active_metrics().limit_keys(),
        )
    finally:
        done.set()
        worker.join()
    assert seen == (None, False)


def test_a_session_table_carries_its_limits_and_growth_facts() -> None:
    table = BUILTIN_METRICS.with_metrics(TOY)
    assert BUILTIN_METRICS.by_name("toy_tokens") is None  # a new table, the old one unchanged
    with use_metrics(table):
        assert active_metrics() is table
        # Growth limits and labels come from the metric's own fields, nothing else to edit.
        assert growth_fields()["max_toy_tokens_growth"] == "toy_tokens"
        assert growth_labels()["toy_tokens"] == "toy tokens"
        spec = resolve_marker(
            (), {"max_toy_tokens_delta": 0.1, "max_toy_tokens_growth": 1.5,
                 "sweep": {"batch": [1, 2]}}, _limits(), where="t.py::t",
        )
        assert "toy_tokens" in spec.limits.explicit
        assert spec.limits.growth == {"max_toy_tokens_growth": 1.5}
    assert "max_toy_tokens_growth" not in growth_fields()
    assert growth_labels()["peak_activation_bytes"] == "peak act."


def test_a_clash_in_a_session_table_is_named() -> None:
    with pytest.raises(ValueError, match="already registered"):
        BUILTIN_METRICS.with_metrics(TOY, TOY)
    clash = Metric(
        name="other", label="other", direction="lower", delta_key="max_flops_delta",
        default_delta=Exact(), formatter=str,
    )
    with pytest.raises(ValueError, match="max_flops_delta"):
        BUILTIN_METRICS.with_metrics(clash)


def _limits() -> Limits:
    return Limits()
