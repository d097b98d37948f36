"""The predicted-GPU-time metric: the forward's time on a GPU preset, from a calibrated model.

One collector (:data:`PREDICTED`) profiles the gated model on meta and prices its kernels
(:mod:`pytest_modelprof.predict`) when a limit on ``predicted_time`` (ms) is set. Counts in, a
number out: it moves only when the model's kernels do, so a relative limit gates it like a count. It
depends on the kernels the capture sees, so a baseline from another torch warns instead of
failing.

Standard library only (the measurement is named by string, imported on first use).
"""

from __future__ import annotations

from pytest_modelprof.baseline.collector import Collector
from pytest_modelprof.baseline.metric import Metric
from pytest_modelprof.baseline.tolerance import Ignore
from pytest_modelprof.units import parse_time

__all__ = ["PREDICTED", "PREDICTED_METRICS"]

PREDICTED = Collector(
    "predicted",
    measure="pytest_modelprof.predict.gate:measure",
    needs="the model captured on meta and priced by the calibrated GPU-time model",
)


#: The forward on an RTX 4090 with fp16 autocast (the marker's ``precision=`` picks another).
PREDICTED_METRICS: tuple[Metric, ...] = (
    Metric(
        name="predicted_time",
        label="predicted GPU time",
        direction="lower",
        delta_key="max_predicted_time_delta",
        default_delta=Ignore(),
        formatter=lambda v: f"{v:.3g} ms",
        budget_key="max_predicted_time",
        budget_parser=parse_time,
        summary=False,
        kernel_dependent=True,
        collector=PREDICTED,
    ),
)
