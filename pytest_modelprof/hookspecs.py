"""Hooks other plugins implement to extend pytest-modelprof (registered by the plugin)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from collections.abc import Sequence

    from pytest_modelprof.baseline.collector import Collector
    from pytest_modelprof.baseline.metrics import Metric
    from pytest_modelprof.costs.registry import CostRegistry
    from pytest_modelprof.gate.request import ProfileRequest
    from pytest_modelprof.results.record import ProfileResult
    from pytest_modelprof.schema import ModelProfile

__all__: list[str] = []


@pytest.hookspec(firstresult=True)
def pytest_modelprof_profile(
    config: pytest.Config, request: ProfileRequest
) -> ModelProfile | None:
    """Profile ``request`` instead of :func:`pytest_modelprof.profile_model`.

    Return ``None`` to let the next implementation (finally the built-in engine) handle it.
    Useful for another engine, a remote profiler, or a fake in the plugin's own tests.
    """


@pytest.hookspec()
def pytest_modelprof_record(config: pytest.Config, record: ProfileResult) -> None:
    """Called once per gated profile, on the xdist controller (or the only process); a gated
    test that failed before its gate judged it gives one record with status ``error``.

    ``record`` is the results file's entry for the profile (``results.record.ProfileResult``);
    its ``checks`` are :class:`~pytest_modelprof.baseline.check.Check` rows."""


@pytest.hookspec()
def pytest_modelprof_register_formulas(config: pytest.Config, registry: CostRegistry) -> None:
    """Add cost formulas for ops that have none (custom ops): ``registry.register(...)``.

    Called once per session (on each xdist worker) before the first profile, with a copy of
    the built-in registry that every profile of the session uses::

        def pytest_modelprof_register_formulas(registry):
            @registry.register("mylib::attn", family="attention")
            def attn(args, out):
                return OpCost(flops=4 * args["q"].numel)
    """


@pytest.hookspec()
def pytest_modelprof_register_metrics(config: pytest.Config) -> Sequence[Metric] | None:
    """Return metrics to gate in this session besides the built-in ones.

    Called once per session (on each xdist worker and the controller) at configure time; the
    metrics join this session's metric set only, so their limits work in markers. A metric with
    a measurement of its own names its collector by key (``collector="calls"``), returned by
    :func:`pytest_modelprof_register_collectors`::

        def pytest_modelprof_register_metrics(config):
            return [Metric(name="calls", label="calls", direction="lower",
                           delta_key="max_calls_delta", default_delta=Exact(),
                           formatter=str, collector="calls")]
    """


@pytest.hookspec()
def pytest_modelprof_register_collectors(config: pytest.Config) -> Sequence[Collector[Any]] | None:
    """Return collectors (:class:`pytest_modelprof.baseline.collector.Collector`) for the
    metrics of this session's ``pytest_modelprof_register_metrics`` that name them::

        def pytest_modelprof_register_collectors(config):
            return [JsonCollector("calls", measure_with=count_calls)]
    """
