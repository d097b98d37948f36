"""Seen before, "environment and source maps live outside the metric table": the environment facts
are one table every reader uses, and what a metric depends on (kernels, the CPU, the field a
sweep fits) is declared on the metric once and reaches every place that used to keep a list."""

from __future__ import annotations

from collections.abc import Callable

import torch.nn as nn

from pytest_modelprof.baseline.compare import compare
from pytest_modelprof.baseline.document import BaselineDocument, BaselineEnvironment
from pytest_modelprof.baseline.environment import ENVIRONMENT_FACTS, fact_changes
from pytest_modelprof.baseline.metrics import Metric, extended_metrics
from pytest_modelprof.baseline.tolerance import Exact
from pytest_modelprof.gate.judge import growth_checks
from pytest_modelprof.gate.limits import Limits
from pytest_modelprof.report.summary import environment_line, problem_lines
from pytest_modelprof.results.record import ProfileResult
from pytest_modelprof.runtime.sweep import sweep
from pytest_modelprof.schema import ModelProfile

MakeProfile = Callable[..., ModelProfile]

# Declared once: counted on kernels and on the CPU (as instructions are), and fitted by a sweep
# from the profile's params.
TOY = Metric(
    name="toy_bytes",
    label="toy bytes",
    getter=lambda p: p.total_traffic,
    direction="lower",
    delta_key="max_toy_bytes_delta",
    default_delta=Exact(),
    formatter=lambda v: f"{v:g} toy-B",
    kernel_dependent=True,
    cpu_dependent=True,
    growth_key="max_toy_growth",
    sweep_field="params",
)


def _doc(profile: ModelProfile, **env: str) -> BaselineDocument:
    doc = BaselineDocument.from_profile(profile, test="t.py::t", name=None, settings={})
    return doc.model_copy(
        update={"environment": doc.environment.model_copy(update={"cpu": "AMD", **env})}
    )


def test_every_recorded_environment_fact_is_in_the_one_table() -> None:
    fields = [f.field for f in ENVIRONMENT_FACTS]
    assert sorted(fields) == sorted(BaselineEnvironment.model_fields) and len(set(fields)) == len(
        fields
    )


def test_the_history_names_every_fact_the_gate_names() -> None:
    before = BaselineEnvironment(
        torch_version="2.14.1",
        device="cpu",
        dtype="float32",
        capture_mode="real",
        cpu="AMD",
        cpu_flags="avx2",
    )
    after = before.model_copy(update={"cpu": "Intel", "cpu_flags": "avx2 avx512f"})
    # The history's notes: every fact, from the one function the gate's comparison uses too.
    assert fact_changes(before, after, unknown="unknown") == [
        "cpu AMD \u2192 Intel",
        "cpu flags +avx512f",
    ]


def test_a_toy_metric_declared_once_reaches_every_map(make_profile: MakeProfile) -> None:
    with extended_metrics(TOY):
        before = _doc(make_profile(memory=100))
        other_cpu = _doc(make_profile(memory=200), cpu="Intel")
        comparison = compare(other_cpu, before, Limits().policy())
        rows = {c.metric: c for c in comparison.checks}
        # Another CPU lets the CPU's counts off, as for instructions; traffic does not run on it.
        assert rows["toy_bytes"].verdict == "warning"
        assert rows["traffic"].verdict == "regressed"
        record = ProfileResult(
            nodeid="t.py::t",
            model="m",
            status="regressed",
            checks=list(comparison.checks),
            environment=list(comparison.environment),
        )
        note = "\n".join(problem_lines([record]))
        # The run's line names the kernel-dependent counts its rows have that this change lets
        # off: a CPU change, so the CPU's counts only.
        assert "(toy bytes;" in note
        other_torch = _doc(make_profile(memory=200), torch_version="9.9")
        line = environment_line(
            [("torch 2.14.1 \u2192 9.9",)],
            metrics=[c.metric for c in compare(other_torch, before, Limits().policy()).checks],
        )
        # Another torch: every kernel-dependent count the rows have (this profile has no
        # partition, so no subgraphs or stages), the toy one included.
        assert line is not None and "(traffic, peak activations, toy bytes;" in line

        # A sweep fits its field, and its growth limit judges the fit.
        result = sweep(
            nn.Linear(4, 4), {"batch": [1, 2, 4]}, input_shape=(1, 4), latency=False, device="meta"
        )
        assert "params" in result.series[0].fits
        limits = Limits().with_values({"max_toy_growth": 0.5}, "test")
        (row,) = growth_checks(result.model_dump(mode="json"), limits)
        assert row.label == "toy bytes growth (batch)" and row.verdict == "ok"


def test_the_environment_is_torch_the_device_type_and_the_cpu(make_profile: MakeProfile) -> None:
    before = _doc(make_profile(memory=100), capture_mode="real", device="cuda:0")
    policy = Limits().policy()

    def memory_verdict(**env: str) -> tuple[str, tuple[str, ...]]:
        comparison = compare(_doc(make_profile(memory=200), capture_mode="real", **env), before,
                             policy)
        return {c.metric: c.verdict for c in comparison.checks}["traffic"], comparison.environment

    # The dtype is the test's choice, and another index of one device type runs the same
    # kernels: memory doubling is the test's cost change, judged by its limit.
    assert memory_verdict(device="cuda:0", dtype="float64") == ("regressed", ())
    assert memory_verdict(device="cuda:1") == ("regressed", ())
    # Another torch or another device type is the environment: the kernel count warns.
    assert memory_verdict(device="cuda:0", torch_version="9.9")[0] == "warning"
    assert memory_verdict(device="cpu") == ("warning", ("device cuda:0 \u2192 cpu",))
