"""The predicted-GPU-time collector: the gated forward priced on the gate's GPU.

The evidence says which GPU and precision its number means, so a baseline does too; the
marker's autocast precisions map to the prediction's names, and a precision the calibration
tables do not know falls back to the gate's default instead of failing the test.
"""

from __future__ import annotations

import pytest
from torch import nn

from pytest_modelprof.baseline.collector import Measure
from pytest_modelprof.gate.limits import Limits
from pytest_modelprof.gate.request import ProfileRequest
from pytest_modelprof.predict import predict_profile
from pytest_modelprof.predict.gate import GATE_GPU, GATE_PRECISION, PREDICTED_COLLECTOR
from pytest_modelprof.profile import profile_with_capture


def _model() -> nn.Module:
    return nn.Sequential(nn.Linear(64, 256), nn.GELU(), nn.Linear(256, 64))


def _evidence(step: tuple[tuple[str, object], ...] = ()) -> dict[str, object]:
    request = ProfileRequest(_model(), input_shape=(8, 64), step=step, include_backward=True)
    call = Measure(request=request, limits=Limits(), limited=frozenset({"predicted_time"}))
    assert PREDICTED_COLLECTOR.wanted(call)
    evidence = PREDICTED_COLLECTOR.measure(call)
    assert evidence is not None
    return dict(evidence)


def test_the_forward_is_priced_on_the_gate_gpu_and_the_evidence_names_it() -> None:
    got = _evidence()
    expected = predict_profile(
        profile_with_capture(_model(), input_shape=(8, 64)), GATE_GPU, precision=GATE_PRECISION
    )
    # The backward the request asks to capture is not priced: the forward's time alone.
    assert got["predicted_time"] == round(expected.forward_ms, 6)  # ms, 6 decimals kept
    assert got["machine"] == expected.machine and got["precision"] == "amp"
    assert got["batch"] == 8
    shares = got["bound_shares"]
    assert isinstance(shares, dict) and sum(shares.values()) == pytest.approx(1.0, abs=1e-3)
    assert PREDICTED_COLLECTOR.values(got)["predicted_time"] == got["predicted_time"]


@pytest.mark.parametrize(
    ("given", "priced"),
    [("bf16-mixed", "amp-bf16"), ("fp16-mixed", "amp"), ("fp32", "fp32"), ("bf16-master", "amp")],
)
def test_the_step_precision_chooses_the_priced_precision(given: str, priced: str) -> None:
    assert _evidence((("precision", given),))["precision"] == priced


def test_no_limit_on_the_predicted_time_predicts_nothing() -> None:
    call = Measure(request=ProfileRequest(_model(), input_shape=(8, 64)), limits=Limits())
    assert not PREDICTED_COLLECTOR.wanted(call)
