"""Measured runtime costs: latency, measured memory and a noise-resistant timing comparison.

Counted costs (FLOPs, bytes, estimated peak) come from one capture in
:mod:`pytest_modelprof.profile`; this package *runs* the model and measures it. Importing it
imports torch, so the pytest plugin imports it only when a test asks for timings.
"""

from __future__ import annotations

from pytest_modelprof.runtime.context import ProfilingContext
from pytest_modelprof.runtime.memory import (
    AllocationTracker,
    MemoryStats,
    measure_memory,
)
from pytest_modelprof.runtime.noise import (
    CALIBRATION_VERSION,
    DEFAULT_ALPHA,
    DEFAULT_QUANTILE,
    DEFAULT_TOLERANCE,
    GateDecision,
    LatencyComparison,
    NormalisedTiming,
    calibration_workload,
    compare_timings,
    latency_gate,
    measure_forward_normalised,
    measure_normalised,
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
    "DEFAULT_ALPHA",
    "DEFAULT_QUANTILE",
    "DEFAULT_TOLERANCE",
    "NormalisedTiming",
    "LatencyComparison",
    "GateDecision",
    "calibration_workload",
    "measure_normalised",
    "measure_forward_normalised",
    "compare_timings",
    "latency_gate",
]
