"""torchvision as a model source: every builder of ``torchvision.models.list_models()``.

Models are built with ``weights=None`` but with the architecture their DEFAULT weights would
give them (see ``_WEIGHTS_ARCH``), so parameter counts match torchvision's ``meta["num_params"]``
for every builder. Default input shapes come from the DEFAULT weights' transforms.
"""

from __future__ import annotations

import functools
import inspect
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final, Literal, final

from pytest_modelprof.models._meta import meta_safe_build
from pytest_modelprof.models._names import torchvision_scan
from pytest_modelprof.models._spec import InputKind, ModelSpec, Shape

if TYPE_CHECKING:
    from torch import nn

__all__ = [
    "GROUPS",
    "Reference",
    "torchvision_names",
    "torchvision_spec",
    "torchvision_references",
]

Group = Literal[
    "classification", "detection", "segmentation", "video", "optical_flow", "quantization"
]
GROUPS: Final[tuple[Group, ...]] = (
    "classification",
    "detection",
    "segmentation",
    "video",
    "optical_flow",
    "quantization",
)

# Every video _ops figure in torchvision's weights meta was measured on 16-frame clips (checked:
# r3d_18 gives 40.697 GMACs at 1x3x16x112x112 and exactly half at 8 frames), although some
# weights' "_docs" quote clip_len=32 (swin3d) or 128 (s3d) for their accuracy numbers.
VIDEO_FRAMES: Final = 16

# torchvision's detection transform resizes each image so its short side is ``min_size``;
# feeding that size avoids a resize. Builders not listed use 800 (the R-CNN family default).
_DETECTION_SIZE: Final[Mapping[str, int]] = {
    "fasterrcnn_mobilenet_v3_large_320_fpn": 320,
    "ssd300_vgg16": 300,
    "ssdlite320_mobilenet_v3_large": 320,
}
_DETECTION_DEFAULT_SIZE: Final = 800
# Weights enums of segmentation models only give resize_size=520 (no crop).
_SEGMENTATION_SIZE: Final = 520
# RAFT needs H and W divisible by 8; 520x960 is the size torchvision's own flow examples use.
_FLOW_SHAPE: Final[Shape] = (1, 3, 520, 960)

# Architecture kwargs that torchvision's builders set themselves when given weights; we pass
# them with weights=None so the random-weight model is the one the pretrained weights describe.
_WEIGHTS_ARCH: Final[Mapping[str, Mapping[str, Any]]] = {
    # init_weights=False also skips the scipy truncnorm init (slow, and warns FutureWarning).
    "googlenet": {"transform_input": True, "aux_logits": False, "init_weights": False},
    "quantized_googlenet": {"transform_input": True, "aux_logits": False, "init_weights": False},
    "inception_v3": {"transform_input": True, "aux_logits": True, "init_weights": False},
    "quantized_inception_v3": {"transform_input": True, "aux_logits": True, "init_weights": False},
}

# Detection builders that use FrozenBatchNorm2d in the backbone whenever weights are given
# ("is_trained"); with weights=None they would use trainable BatchNorm2d (+53,120 params for
# the ResNet-50 ones), so we swap it back after construction.
_FROZEN_BN_BUILDERS: Final = frozenset(
    {
        "fasterrcnn_resnet50_fpn",
        "fasterrcnn_mobilenet_v3_large_fpn",
        "fasterrcnn_mobilenet_v3_large_320_fpn",
        "maskrcnn_resnet50_fpn",
        "keypointrcnn_resnet50_fpn",
        "retinanet_resnet50_fpn",
        "fcos_resnet50_fpn",
    }
)


@final
@dataclass(frozen=True)
class Reference:
    """One torchvision weights entry with published cost figures, for accuracy tests.

    ``gmacs`` is torchvision's ``meta["_ops"]``: GMACs (one per multiply-add), rounded to 3
    decimals, so compare with an absolute tolerance of 0.0005 GMACs. Build with
    ``resolve(model).build(input_shape, **arch_kwargs)``.
    """

    model: str
    weights: str
    group: str
    input_shape: Shape
    arch_kwargs: Mapping[str, Any] = field(hash=False)
    gmacs: float
    num_params: int


@functools.cache
def torchvision_names() -> dict[Group, tuple[str, ...]]:
    """Builder names by group; quantization builders are listed only under ``quantization``.
    Read from torchvision's sources (no import: seconds saved on a misspelled name) unless
    torchvision is imported already, where its registry is as cheap."""
    scanned = None if "torchvision.models" in sys.modules else torchvision_scan()
    if scanned is not None:
        return {group: scanned.get(group, ()) for group in GROUPS}
    return registered_names()


def registered_names() -> dict[Group, tuple[str, ...]]:
    """Builder names by group from torchvision's own registry (imports torchvision)."""
    import torchvision.models as tvm

    modules: dict[Group, Any] = {
        "classification": tvm,
        "detection": tvm.detection,
        "segmentation": tvm.segmentation,
        "video": tvm.video,
        "optical_flow": tvm.optical_flow,
        "quantization": tvm.quantization,
    }
    return {group: tuple(sorted(tvm.list_models(module=mod))) for group, mod in modules.items()}


@functools.cache
def _group_of() -> dict[str, Group]:
    return {name: group for group, names in torchvision_names().items() for name in names}


def torchvision_spec(name: str) -> ModelSpec | None:
    """The spec of torchvision builder ``name``, or None if torchvision has no such builder."""
    group = _group_of().get(name)
    if group is None:
        return None
    return _spec(name, group)


@functools.cache
def _spec(name: str, group: Group) -> ModelSpec:
    import torchvision.models as tvm

    builder = tvm.get_model_builder(name)
    params = inspect.signature(builder).parameters
    defaults: dict[str, Any] = dict(_WEIGHTS_ARCH.get(name, {}))
    if "weights_backbone" in params:
        # NB: detection/segmentation builders default to ImageNet backbone weights, i.e. a
        # download; None keeps the build offline (and the backbone random like the rest).
        defaults["weights_backbone"] = None
    if "aux_loss" in params:
        defaults["aux_loss"] = (
            True  # the COCO/VOC weights carry the auxiliary head, and it runs in eval
        )
    if group == "quantization":
        defaults["quantize"] = False  # the float (quantizable) model: the one we can count on meta

    kind: InputKind = "tensor"
    if group == "detection":
        kind = "image_list"
        size = _DETECTION_SIZE.get(name, _DETECTION_DEFAULT_SIZE)
        shape: Shape = (1, 3, size, size)
    elif group == "segmentation":
        shape = (1, 3, _SEGMENTATION_SIZE, _SEGMENTATION_SIZE)
    elif group == "optical_flow":
        kind = "image_pair"
        shape = _FLOW_SHAPE
    else:
        height, width = _crop_size(tvm.get_model_weights(name).DEFAULT)
        shape = (1, 3, VIDEO_FRAMES, height, width) if group == "video" else (1, 3, height, width)

    return ModelSpec(
        name=name,
        source="torchvision",
        builder=functools.partial(_build, name),
        default_input_shape=shape,
        input_kind=kind,
        group=f"torchvision.{group}",
        default_arch_kwargs=defaults,
        shape_kwargs=functools.partial(_shape_kwargs, name),
    )


def _crop_size(weights: Any) -> tuple[int, int]:
    crop = weights.transforms.keywords["crop_size"]
    if isinstance(crop, int):
        return crop, crop
    if len(crop) == 1:
        return int(crop[0]), int(crop[0])
    return int(crop[0]), int(crop[1])


def _shape_kwargs(name: str, shape: Shape) -> dict[str, Any]:
    """Architecture kwargs fixed by the input resolution (positional embeddings, window sizes)."""
    if len(shape) < 2:
        return {}
    height, width = shape[-2], shape[-1]
    if name.startswith("vit_"):
        # VisionTransformer sizes its position embedding for a square image_size x image_size.
        return {"image_size": height}
    if name == "maxvit_t":
        return {"input_size": (height, width)}
    # NB: mvit_v1_b/mvit_v2_s hard-code spatial_size=(224, 224), temporal_size=16 in their
    # builders (only weights may override them), so they run at 16x224x224 only.
    return {}


def _build(name: str, **kwargs: Any) -> nn.Module:
    import torchvision.models as tvm

    builder: Callable[..., nn.Module] = tvm.get_model_builder(name)
    if name.startswith("regnet_"):
        # BlockParams.from_init_params computes stage widths with tensors + .tolist().
        model = meta_safe_build(lambda: builder(weights=None, **kwargs))
    else:
        model = builder(weights=None, **kwargs)
    if name in _FROZEN_BN_BUILDERS:
        _freeze_backbone_batchnorm(model)
    return model


def _freeze_backbone_batchnorm(model: nn.Module) -> None:
    from torch import nn
    from torchvision.ops.misc import FrozenBatchNorm2d

    body = model.get_submodule("backbone.body")
    for parent in list(body.modules()):
        for child_name, child in list(parent.named_children()):
            if isinstance(child, nn.BatchNorm2d):
                # Default eps, as torchvision passes the bare class as norm_layer.
                setattr(parent, child_name, FrozenBatchNorm2d(child.num_features))


def torchvision_references(
    groups: tuple[Group, ...] = ("classification", "video"),
) -> list[Reference]:
    """One ``Reference`` per weights enum value of ``groups`` with ``_ops`` and ``num_params``."""
    import torchvision.models as tvm

    names = torchvision_names()
    refs: list[Reference] = []
    for group in groups:
        for name in names[group]:
            spec = _spec(name, group)
            assert spec.default_input_shape is not None
            for weights in tvm.get_model_weights(name):
                meta = weights.meta
                if "_ops" not in meta or "num_params" not in meta:
                    continue
                shape = spec.default_input_shape
                if group in ("classification", "video", "quantization"):
                    height, width = _crop_size(weights)
                    shape = (*shape[:-2], height, width)
                # Only the kwargs that differ from what the builder does at its default size,
                # e.g. {"image_size": 518} for ViT_H_14_Weights.IMAGENET1K_SWAG_E2E_V1.
                implied = _shape_kwargs(name, shape)
                at_default = _shape_kwargs(name, _builder_default_shape(name, shape))
                arch = {k: v for k, v in implied.items() if at_default.get(k) != v}
                refs.append(
                    Reference(
                        model=name,
                        weights=str(weights),
                        group=group,
                        input_shape=shape,
                        arch_kwargs=arch,
                        gmacs=float(meta["_ops"]),
                        num_params=int(meta["num_params"]),
                    )
                )
    return refs


def _builder_default_shape(name: str, shape: Shape) -> Shape:
    # Every resolution-dependent torchvision builder (vit_*, maxvit_t) defaults to 224x224.
    return (*shape[:-2], 224, 224)
