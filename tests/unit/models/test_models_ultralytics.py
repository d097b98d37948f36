"""ultralytics source: bundled YAML names, offline builds, ``.pt`` handling."""

from __future__ import annotations

import socket
from pathlib import Path
from typing import Any

import pytest
import torch

from pytest_modelprof.errors import ModelNotFoundError
from pytest_modelprof.models import list_models, resolve

pytest.importorskip("ultralytics")


def _num_params(module: torch.nn.Module) -> int:
    return sum(p.numel() for p in module.parameters())


def test_bundled_names_expand_scales_and_tasks() -> None:
    names = set(list_models()["ultralytics"])
    for scale in "nsmlx":
        assert f"yolov8{scale}.yaml" in names
        assert f"yolo11{scale}.yaml" in names
    for task in ("seg", "pose", "cls", "obb"):
        assert f"yolov8n-{task}.yaml" in names
    # Already-scaled or unscaled files keep their name; no "yolov10nn" or bare "yolov8.yaml".
    assert {"yolov10n.yaml", "yolov10b.yaml", "yolov9c.yaml", "rtdetr-l.yaml"} <= names
    assert "yolov8.yaml" not in names and "yolov10nn.yaml" not in names


def test_yolov8n_builds_on_cpu_with_ultralytics_param_count() -> None:
    from ultralytics.nn.tasks import DetectionModel

    spec = resolve("yolov8n.yaml")
    assert spec.source == "ultralytics"
    assert spec.default_input_shape == (1, 3, 640, 640)
    module = spec.build()
    assert not module.training
    # ultralytics' own figure for yolov8n (80 classes) is 3,157,200.
    reference = DetectionModel("yolov8n.yaml", verbose=False)  # type: ignore[no-untyped-call]
    assert _num_params(module) == _num_params(reference) == 3_157_200
    args, kwargs = spec.example_inputs(input_shape=(1, 3, 64, 64))
    with torch.no_grad():
        module(*args, **kwargs)


def test_detect_models_build_on_meta() -> None:
    # The Detect head measures its strides with a dry forward pass; see models/_meta.py.
    with torch.device("meta"):
        module = resolve("yolo11n.yaml").build()
    assert {t.device.type for t in (*module.parameters(), *module.buffers())} == {"meta"}
    assert module.stride.tolist() == [8.0, 16.0, 32.0]  # type: ignore[operator]
    assert _num_params(module) == 2_624_080


@pytest.mark.parametrize(
    ("name", "cls_name"),
    [
        ("yolov8n-seg.yaml", "SegmentationModel"),
        ("yolov8n-pose.yaml", "PoseModel"),
        ("yolov8n-obb.yaml", "OBBModel"),
        ("yolov8n-cls.yaml", "ClassificationModel"),
        ("rtdetr-l.yaml", "RTDETRDetectionModel"),
    ],
)
def test_task_variants_pick_the_right_class(name: str, cls_name: str) -> None:
    with torch.device("meta"):
        module = resolve(name).build()
    assert type(module).__name__ == cls_name


def test_classify_default_shape_and_no_summary(capsys: pytest.CaptureFixture[str]) -> None:
    spec = resolve("yolov8n-cls.yaml")
    assert spec.default_input_shape == (1, 3, 224, 224)
    with torch.device("meta"):
        spec.build()
    captured = capsys.readouterr()
    assert "summary" not in captured.out + captured.err


def test_torchvision_layers_are_built_without_weights(monkeypatch: pytest.MonkeyPatch) -> None:
    # yolo11-cls-resnet18.yaml asks torchvision for weights="DEFAULT" (a download).
    _forbid_network(monkeypatch)
    with torch.device("meta"):
        module = resolve("yolo11-cls-resnet18.yaml").build()
    assert _num_params(module) > 0


def test_input_channels_follow_the_input_shape() -> None:
    spec = resolve("yolov8n.yaml")
    assert spec.arch_kwargs_for((1, 1, 640, 640)) == {"ch": 1}
    with torch.device("meta"):
        module = spec.build(input_shape=(1, 1, 640, 640))
    first_conv = next(m for m in module.modules() if isinstance(m, torch.nn.Conv2d))
    assert first_conv.in_channels == 1


def test_custom_yaml_path_on_disk(tmp_path: Path) -> None:
    import ultralytics

    bundled = Path(ultralytics.__file__).parent / "cfg" / "models" / "v8" / "yolov8.yaml"
    custom = tmp_path / "my-yolov8s.yaml"
    custom.write_text(bundled.read_text(encoding="utf-8"), encoding="utf-8")
    with torch.device("meta"):
        module = resolve(str(custom)).build()
        bundled_s = resolve("yolov8s.yaml").build()
    # The "s" in the file name picks the scale, as ultralytics does for its own names.
    assert _num_params(module) == _num_params(bundled_s) == 11_166_560


def _forbid_network(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError(f"network access attempted: {args!r}")

    monkeypatch.setattr(socket, "getaddrinfo", refuse)
    monkeypatch.setattr(socket.socket, "connect", refuse)


def test_missing_pt_fails_at_once_offline_and_suggests_yaml(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # "At once" without a timer: every network call raises, so resolving cannot wait on one.
    _forbid_network(monkeypatch)
    with pytest.raises(ModelNotFoundError) as info:
        resolve("yolov8n.pt")
    message = str(info.value)
    assert "not on disk" in message
    assert "never downloads" in message
    assert "'yolov8n.yaml'" in message


def test_existing_pt_file_loads(tmp_path: Path) -> None:
    from ultralytics.nn.tasks import DetectionModel

    checkpoint = tmp_path / "tiny.pt"
    model = DetectionModel("yolov8n.yaml", verbose=False)  # type: ignore[no-untyped-call]
    torch.save({"model": model}, checkpoint)
    spec = resolve(str(checkpoint))
    assert spec.source == "ultralytics"
    module = spec.build()
    assert _num_params(module) == 3_157_200
    assert not module.training


def test_unknown_yaml_suggests_close_names() -> None:
    with pytest.raises(ModelNotFoundError, match=r"yolov8n\.yaml"):
        resolve("yolov8q.yaml")
