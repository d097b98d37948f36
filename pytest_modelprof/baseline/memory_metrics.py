"""The "will it fit?" metrics: the peak memory of a training and an inference step, and its parts.

One collector (:data:`MEMORY`) estimates the step on tensors without data
(:mod:`pytest_modelprof.fit`) when a limit on one of these metrics is set: a budget such as
``max_train_memory="80GB"`` holds with or without a baseline, ``max_train_memory_delta``
against it. The totals are exact in the worse direction by default, like every counted
number; each component (parameters, gradients, optimizer state, activations, transient) is
a row of its own in every report, judged only when its own delta limit is set.
``max_train_memory_growth`` bounds the growth of the total over a scaling sweep.

Standard library only: the measurement is its owner's, registered under the collector key.
"""

from __future__ import annotations

from typing import Final

from pytest_modelprof.baseline.metric import Metric
from pytest_modelprof.baseline.tolerance import Exact, Ignore
from pytest_modelprof.units import format_bytes, parse_bytes

__all__ = ["MEMORY_METRICS", "STEP_COMPONENTS"]

#: The key of the collector of these metrics (registered by its owner package).
MEMORY: Final = "memory"

#: The components each step reports, in the order the rows list them.
STEP_COMPONENTS: dict[str, tuple[str, ...]] = {
    "train": ("parameters", "gradients", "optimizer_state", "activations", "transient"),
    "inference": ("parameters", "activations", "transient"),
}


def _metrics(step: str) -> tuple[Metric, ...]:
    total = Metric(
        name=f"{step}_memory",
        integer=True,
        label=f"{step} memory",
        direction="lower",
        delta_key=f"max_{step}_memory_delta",
        budget_key=f"max_{step}_memory",
        budget_parser=parse_bytes,
        default_delta=Exact(),
        formatter=format_bytes,
        summary=False,
        kernel_dependent=True,
        collector=MEMORY,
        # A sweep (marker ``sweep=``) estimates the step at each point and fits its growth.
        growth_key=f"max_{step}_memory_growth",
        sweep_field=f"{step}_memory",
    )
    parts = tuple(
        Metric(
            name=f"{step}_memory_{part}",
            integer=True,
            label=f"{step} memory: {part.replace('_', ' ')}",
            direction="lower",
            delta_key=f"max_{step}_memory_{part}_delta",
            default_delta=Ignore(),
            formatter=format_bytes,
            summary=False,
            kernel_dependent=True,
            collector=MEMORY,
            stack=f"{step}_memory",  # the HTML report's stacked bar of the step's peak
        )
        for part in STEP_COMPONENTS[step]
    )
    return (total, *parts)


#: Training step (forward, backward, the optimizer's update) and inference (forward, no_grad).
MEMORY_METRICS: tuple[Metric, ...] = (*_metrics("train"), *_metrics("inference"))
