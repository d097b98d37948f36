"""ultralytics as a model source: bundled YAML configs (random weights) and ``.pt`` files on disk.

ultralytics is an optional extra. Listing names only reads the YAML files shipped in the package
(found with ``importlib.util.find_spec``, no import); ultralytics itself is imported when a model
is built, with ``YOLO_OFFLINE=1`` so its import-time connectivity probe does no DNS lookups.
"""

from __future__ import annotations

import contextlib
import functools
import importlib.util
import logging
import os
import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from pytest_modelprof.errors import ModelBuildError, ModelNotFoundError
from pytest_modelprof.models._meta import meta_safe_build
from pytest_modelprof.models._spec import ModelSpec, Shape

if TYPE_CHECKING:
    from torch import nn

__all__ = [
    "ultralytics_available",
    "ultralytics_names",
    "ultralytics_spec",
    "checkpoint_spec",
    "is_yaml_name",
    "is_checkpoint_name",
]

INSTALL_HINT: Final = 'pip install "pytest-modelprof[yolo]"'
DEFAULT_SHAPE: Final[Shape] = (1, 3, 640, 640)
# ultralytics trains and reports its -cls models at imgsz=224, not 640.
CLASSIFY_SHAPE: Final[Shape] = (1, 3, 224, 224)

# "yolov8-seg" -> ("yolov8", None, "-seg"); "yolov10n" -> ("yolov10", "n", ""); "yoloe-11" too.
_STEM: Final = re.compile(r"^(yolo(?:e-)?v?\d+)([a-z])?(.*)$")
_SCALES_START: Final = re.compile(r"^scales:\s*(#.*)?$")
_SCALE_ENTRY: Final = re.compile(r"^\s+([A-Za-z0-9_]+)\s*:")


def ultralytics_available() -> bool:
    """Whether the optional ``ultralytics`` package is installed (without importing it)."""
    return importlib.util.find_spec("ultralytics") is not None


def is_yaml_name(name: str) -> bool:
    """Whether ``name`` looks like an ultralytics model config."""
    return name.lower().endswith((".yaml", ".yml"))


def is_checkpoint_name(name: str) -> bool:
    """Whether ``name`` looks like an ultralytics checkpoint."""
    return name.lower().endswith(".pt")


@functools.cache
def _bundled() -> Mapping[str, tuple[Path, str]]:
    """Model name -> (bundled YAML file, scale letter or "")."""
    spec = importlib.util.find_spec("ultralytics")
    if spec is None or not spec.submodule_search_locations:
        return {}
    root = Path(next(iter(spec.submodule_search_locations))) / "cfg" / "models"
    names: dict[str, tuple[Path, str]] = {}
    for path in sorted(root.rglob("*.yaml")):
        scales = _scale_keys(path.read_text(encoding="utf-8"))
        match = _STEM.match(path.stem)
        if scales and match and match.group(2) is None:
            # yolov8.yaml with scales n/s/m/l/x -> yolov8n.yaml ... yolov8x.yaml (ultralytics' way).
            for scale in scales:
                names[f"{match.group(1)}{scale}{match.group(3)}{path.suffix}"] = (path, scale)
        else:
            # Already scaled (yolov10n), single-scale (rtdetr-l) or unscaled (yolov9c, yolov3).
            own = match.group(2) if match and match.group(2) in scales else ""
            names[path.name] = (path, own or (scales[0] if len(scales) == 1 else ""))
    return names


def _scale_keys(text: str) -> list[str]:
    """Keys of the top-level ``scales:`` mapping, read line by line.

    A full YAML parse of ~60 configs takes a second with the pure-Python loader; ultralytics'
    configs always write ``scales`` as a block mapping of one-line ``key: [...]`` entries.
    """
    keys: list[str] = []
    inside = False
    for line in text.splitlines():
        if not inside:
            inside = bool(_SCALES_START.match(line))
            continue
        if line.strip() == "" or line.lstrip().startswith("#"):
            continue
        if not line[0].isspace():
            break
        key = _SCALE_ENTRY.match(line)
        if key:
            keys.append(key.group(1))
    return keys


def ultralytics_names() -> tuple[str, ...]:
    """Every bundled config name, scales expanded (``yolov8n.yaml`` … ``yolov8x-seg.yaml``)."""
    return tuple(sorted(_bundled()))


def _missing_extra(name: str) -> ModelNotFoundError:
    return ModelNotFoundError(
        f"model {name!r} is an ultralytics YOLO name, but ultralytics is not installed; "
        f"install the extra: {INSTALL_HINT}"
    )


def ultralytics_spec(name: str) -> ModelSpec | None:
    """Spec for a bundled config name or a ``.yaml`` file on disk; None if neither."""
    if not ultralytics_available():
        raise _missing_extra(name)
    bundled = _bundled().get(name)
    scale: str | None
    if bundled is not None:
        path, scale = bundled
    elif Path(name).is_file():
        path, scale = Path(name), None  # ultralytics guesses it from the file name
    else:
        return None
    shape = CLASSIFY_SHAPE if "-cls" in path.stem else DEFAULT_SHAPE
    return ModelSpec(
        name=name,
        source="ultralytics",
        builder=functools.partial(_build_yaml, name, str(path), scale),
        default_input_shape=shape,
        group="ultralytics",
        shape_kwargs=_channels_kwargs,
    )


def _channels_kwargs(shape: Shape) -> dict[str, Any]:
    # YOLO models take ch= for the input channels; derive it from (B, C, H, W).
    return {"ch": shape[1]} if len(shape) == 4 and shape[1] != 3 else {}


def checkpoint_spec(name: str) -> ModelSpec:
    """Spec for an ultralytics ``.pt`` checkpoint; raises at once if it is not a file on disk."""
    path = Path(name)
    if not path.is_file():
        yaml_name = f"{path.stem}.yaml"
        hint = (
            f"use the architecture with random weights instead: {yaml_name!r}"
            if yaml_name in _bundled()
            else "use an ultralytics YAML config (see `modelprof list --filter yolo`)"
        )
        raise ModelNotFoundError(
            f"model {name!r}: checkpoint file not on disk ({path.resolve()}); pytest-modelprof "
            f"never downloads weights (it runs offline), so {hint}, or pass the path of a "
            "local .pt file"
        )
    if not ultralytics_available():
        raise _missing_extra(name)
    return ModelSpec(
        name=name,
        source="ultralytics",
        builder=functools.partial(_load_checkpoint, str(path)),
        default_input_shape=DEFAULT_SHAPE,
        group="ultralytics",
    )


def _import_tasks() -> Any:
    # NB: must be set before ultralytics is first imported; setdefault respects a user's choice.
    os.environ.setdefault("YOLO_OFFLINE", "1")
    from ultralytics.nn import tasks

    return tasks


def _model_class(tasks: Any, cfg: Mapping[str, Any], stem: str) -> Any:
    """The nn.Module class ultralytics' ``YOLO``/``RTDETR`` front-ends would pick for a config."""
    head = str(cfg["head"][-1][-2])
    task = tasks.guess_model_task(cfg)
    if "-world" in stem:
        return tasks.WorldModel
    if "yoloe" in stem:
        return tasks.YOLOESegModel if task == "segment" else tasks.YOLOEModel
    if "RTDETR" in head:
        return tasks.RTDETRDetectionModel
    classes = {
        "detect": tasks.DetectionModel,
        "segment": tasks.SegmentationModel,
        "classify": tasks.ClassificationModel,
        "pose": tasks.PoseModel,
        "obb": tasks.OBBModel,
        "semantic": tasks.SemanticSegmentationModel,
        "depth": tasks.DepthModel,
    }
    if task not in classes:
        raise ModelBuildError(
            f"cannot tell the task of ultralytics config {stem!r} (head {head!r})"
        )
    return classes[task]


def _build_yaml(name: str, path: str, scale: str | None, **kwargs: Any) -> nn.Module:
    tasks = _import_tasks()
    cfg = tasks.yaml_model_load(path)
    # yaml_model_load guesses the scale from the file name; the bundled file is unscaled
    # (yolov8.yaml), so set the one the user named. Also avoids its "no scale" log warning.
    if scale is not None:
        cfg["scale"] = scale
    cfg["yaml_file"] = name
    _drop_pretrained_layers(cfg)
    cls = _model_class(tasks, cfg, Path(name).stem)
    kwargs.setdefault("verbose", False)
    # ClassificationModel logs a summary even with verbose=False; keep the build silent.
    with _quiet_logger("ultralytics"):
        if _measures_strides(tasks, cls):
            # Detect heads learn their strides from a dry forward pass and read them as floats.
            return meta_safe_build(lambda: cls(cfg, **kwargs))
        return cls(cfg, **kwargs)  # type: ignore[no-any-return]


def _measures_strides(tasks: Any, cls: Any) -> bool:
    # World/YOLOE heads also keep tensor-made parameters and still fail on meta (the engine
    # then builds them on CPU); RT-DETR has a fixed stride and builds on meta as it is.
    plain = (tasks.WorldModel, tasks.YOLOEModel, tasks.RTDETRDetectionModel)
    return issubclass(cls, tasks.DetectionModel) and not issubclass(cls, plain)


def _drop_pretrained_layers(cfg: dict[str, Any]) -> None:
    """Point ``TorchVision`` layers at ``weights=None``: their default, "DEFAULT", downloads.

    A layer is ``[from, repeats, module, args]``; TorchVision's args are
    ``[c2, model, weights, unwrap, truncate, split]`` (e.g. yolo11-cls-resnet18.yaml).
    """
    for section in ("backbone", "head"):
        for layer in cfg.get(section) or ():
            if len(layer) >= 4 and layer[2] == "TorchVision":
                args = layer[3]
                if len(args) >= 3:
                    args[2] = None
                elif len(args) == 2:
                    args.append(None)


@contextlib.contextmanager
def _quiet_logger(name: str) -> Iterator[None]:
    logger = logging.getLogger(name)
    level = logger.level
    logger.setLevel(logging.WARNING)
    try:
        yield
    finally:
        logger.setLevel(level)


def _load_checkpoint(path: str, **kwargs: Any) -> nn.Module:
    tasks = _import_tasks()
    model, _ = tasks.load_checkpoint(path, **kwargs)
    return model  # type: ignore[no-any-return]
