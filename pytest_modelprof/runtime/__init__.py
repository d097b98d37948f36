"""Measured runtime costs: latency, measured memory and a noise-resistant timing comparison.

Counted costs (FLOPs, bytes, estimated peak) come from one capture in
:mod:`pytest_modelprof.profile`; this package *runs* the model and measures it. Importing it
imports torch, so the pytest plugin imports it only when a test asks for timings.
"""

from __future__ import annotations

from pytest_modelprof.runtime.calibration import (
    DEFAULT_BASELINE_ROUNDS_FACTOR,
    calibration_workload,
    calibration_workloads,
    measure_forward_normalised,
    measure_forward_sequential,
    measure_normalised,
)
from pytest_modelprof.runtime.context import ProfilingContext
from pytest_modelprof.runtime.memory import (
    AllocationTracker,
    MemoryStats,
    measure_memory,
)
from pytest_modelprof.runtime.noise import (
    CALIBRATION_PARTS,
    CALIBRATION_VERSION,
    DEFAULT_ALPHA,
    DEFAULT_MAX_ROUNDS_FACTOR,
    DEFAULT_QUANTILE,
    DEFAULT_TOLERANCE,
    GateDecision,
    LatencyComparison,
    NormalisedTiming,
    compare_sequential,
    compare_timings,
    needs_more_rounds,
)
from pytest_modelprof.runtime.timing import (
    CudaEventTimer,
    PerfCounterTimer,
    Timer,
    TimingStats,
    benchmark_function,
    summarize,
    time_backward,
    time_forward,
    time_training_step,
    timer_for,
)
from pytest_modelprof.runtime.verdicts import latency_gate, timing_to_store, timing_unchanged

__all__ = [
    "ProfilingContext",
    "TimingStats",
    "Timer",
    "PerfCounterTimer",
    "CudaEventTimer",
    "timer_for",
    "summarize",
    "benchmark_function",
    "time_forward",
    "time_backward",
    "time_training_step",
    "MemoryStats",
    "AllocationTracker",
    "measure_memory",
    "CALIBRATION_VERSION",
    "CALIBRATION_PARTS",
    "DEFAULT_ALPHA",
    "DEFAULT_BASELINE_ROUNDS_FACTOR",
    "DEFAULT_MAX_ROUNDS_FACTOR",
    "DEFAULT_QUANTILE",
    "DEFAULT_TOLERANCE",
    "NormalisedTiming",
    "LatencyComparison",
    "GateDecision",
    "calibration_workload",
    "calibration_workloads",
    "measure_normalised",
    "measure_forward_normalised",
    "measure_forward_sequential",
    "compare_timings",
    "compare_sequential",
    "needs_more_rounds",
    "latency_gate",
    "timing_unchanged",
    "timing_to_store",
]
