"""YOLO against ultralytics' own GFLOPs, and real-vs-meta agreement on the models that matter."""

from __future__ import annotations

import warnings

import pytest
import torch

from pytest_modelprof.models import resolve
from pytest_modelprof.profile import profile_model

ultralytics = pytest.importorskip("ultralytics", reason="the yolo extra is not installed")


def ultralytics_gflops(name: str) -> float:
    from ultralytics.utils.torch_utils import get_flops

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = resolve(name).build()
        # The figure ultralytics prints (model cards, model.info()) is that of the fused model:
        # Conv+BN folded into one conv, so batch norm adds nothing.
        model.fuse()
        return float(get_flops(model, imgsz=640))


@pytest.mark.parametrize("name", ["yolov8n.yaml", "yolo11n.yaml"])
def test_yolo_matches_ultralytics_gflops(name: str) -> None:
    p = profile_model(name)
    ours_gflops = 2 * p.total_macs / 1e9
    theirs = ultralytics_gflops(name)
    # ultralytics (thop) reports 2 FLOPs per MAC, like our 2 x MACs: yolov8n 8.744, yolo11n 6.543.
    assert ours_gflops == pytest.approx(theirs, rel=1e-9)
    assert p.uncounted_ops == []


def test_yolov8n_published_figure() -> None:
    # Ultralytics' model card: YOLOv8n, 640 px, 8.7 GFLOPs, 3.2 M params -> 4.372 GMACs.
    p = profile_model("yolov8n.yaml")
    assert round(p.total_macs / 1e9, 3) == 4.372
    assert round(2 * p.total_macs / 1e9, 1) == 8.7
    assert p.total_params == 3_157_200


def test_yolo_real_equals_meta() -> None:
    meta = profile_model("yolov8n.yaml", input_shape=(1, 3, 320, 320))
    real = profile_model("yolov8n.yaml", input_shape=(1, 3, 320, 320), mode="real")
    assert meta.capture.mode == "meta" and real.capture.mode == "real"
    assert (meta.total_flops, meta.total_macs, meta.total_traffic, meta.peak_activation_bytes) == (
        real.total_flops,
        real.total_macs,
        real.total_traffic,
        real.peak_activation_bytes,
    )


@pytest.mark.slow
def test_vit_real_no_grad_fast_path_equals_meta() -> None:
    # On CPU under no_grad, nn.MultiheadAttention takes its fused fast path, which other counters
    # see as one opaque op (attention counted as zero). Counts must not change.
    assert torch.backends.mha.get_fastpath_enabled()
    meta = profile_model("vit_b_16")
    with torch.no_grad():
        real = profile_model("vit_b_16", mode="real")
    assert torch.backends.mha.get_fastpath_enabled()  # restored
    assert real.capture.mode == "real"
    assert (real.total_macs, real.total_flops, real.total_traffic) == (
        meta.total_macs,
        meta.total_flops,
        meta.total_traffic,
    )
    assert round(meta.total_macs / 1e9, 3) == 17.564  # torchvision's published figure


def test_regnet_needs_real_construction_and_still_profiles_on_meta() -> None:
    p = profile_model("regnet_y_400mf")
    assert p.capture.mode == "meta"
    assert round(p.total_macs / 1e9, 3) == 0.402  # torchvision: 0.402 GMACs


def test_detection_falls_back_to_real_and_says_why() -> None:
    p = profile_model("fasterrcnn_mobilenet_v3_large_320_fpn")
    assert p.capture.mode == "real"
    assert p.capture.attempts and p.capture.attempts[0].startswith("meta:")
    assert "nonzero" in p.capture.reason or "nms" in p.capture.reason
    assert p.total_macs > 0 and p.uncounted_ops == []
