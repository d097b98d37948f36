"""The predicted-GPU-time metric's collector: the gated model's forward priced on a GPU preset.

``baseline/predicted_metrics.py`` declares ``predicted_time``; :data:`PREDICTED_COLLECTOR`
measures it when a limit on the metric is set (``max_predicted_time_delta``,
``max_predicted_time``). The GPU and precision are :data:`GATE_GPU` at :data:`GATE_PRECISION`
unless the marker's ``precision`` (the memory step's) names one of the prediction's
precisions; the evidence records which, so a baseline says what its number means.
"""

from __future__ import annotations

from typing import Any

from pytest_modelprof.baseline.collector import EvidenceData, JsonCollector, Measure
from pytest_modelprof.baseline.predicted_metrics import PREDICTED
from pytest_modelprof.machines import PRECISIONS
from pytest_modelprof.predict import predict_profile

__all__ = ["PREDICTED_COLLECTOR"]

#: The GPU the gate predicts on: a common card of the calibration tables.
GATE_GPU = "rtx4090"
#: fp16 autocast, what the calibration tables measured.
GATE_PRECISION = "amp"

_STEP_PRECISIONS = {"fp16-mixed": "amp", "bf16-mixed": "amp-bf16"}


def measure(call: Measure) -> EvidenceData | None:
    """Profile the test's model on meta and predict its forward on :data:`GATE_GPU`."""
    from pytest_modelprof.profile import profile_with_capture

    request = call.request
    kwargs: dict[str, Any] = request.engine_kwargs()
    kwargs.pop("include_backward", None)  # the forward is what is priced
    made = profile_with_capture(request.model, name=request.name, **kwargs)
    given = str(dict(request.step).get("precision", GATE_PRECISION))
    # The memory step's names for autocast ("fp16-mixed") mean the same kernels.
    precision = _STEP_PRECISIONS.get(given, given)
    if precision not in PRECISIONS:
        precision = GATE_PRECISION
    p = predict_profile(made, GATE_GPU, precision=precision, top=3)
    return {
        "predicted_time": round(p.forward_ms, 6),  # ms
        "machine": p.machine,
        "precision": p.precision,
        "batch": p.batch,
        "samples_per_s": round(p.samples_per_s, 3),
        "bound_shares": {k: round(v, 4) for k, v in p.bound_shares.items()},
    }


#: The predicted GPU time of ``predicted_time``, only when a limit on it is set.
PREDICTED_COLLECTOR = JsonCollector(
    PREDICTED,
    measure_with=measure,
    needs="the model captured on meta and priced by the calibrated GPU-time model",
)
