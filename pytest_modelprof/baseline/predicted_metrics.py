"""The predicted-GPU-time metric: the forward's time on a GPU preset, from a calibrated model.

One collector (:data:`PREDICTED`) profiles the gated model on meta and prices its kernels
(:mod:`pytest_modelprof.predict`) when a limit on ``predicted_time`` (ms) is set. Counts in, a
number out: it moves only when the model's kernels do, so a relative limit gates it like a count. It
depends on the kernels the capture sees, so a baseline from another torch warns instead of
failing.

Standard library only: the measurement is its owner's, registered under the collector key.
"""

from __future__ import annotations

from typing import Final

from pytest_modelprof.baseline.metric import Metric
from pytest_modelprof.baseline.tolerance import Ignore
from pytest_modelprof.units import parse_time

__all__ = ["PREDICTED", "PREDICTED_METRICS"]

#: The key of the collector of these metrics (registered by its owner package).
PREDICTED: Final = "predicted"


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
