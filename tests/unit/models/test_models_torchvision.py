"""torchvision source: names, default shapes, meta builds, inputs, references."""

from __future__ import annotations

import pytest
import torch
import torchvision.models as tvm

from pytest_modelprof.models import ModelSpec, list_models, resolve, torchvision_references


def _meta_build(spec: ModelSpec, **kwargs: object) -> torch.nn.Module:
    with torch.device("meta"):
        return spec.build(**kwargs)  # type: ignore[arg-type]


def _num_params(module: torch.nn.Module) -> int:
    return sum(p.numel() for p in module.parameters())


def test_groups_match_torchvision() -> None:
    groups = list_models()
    assert len(groups["torchvision.classification"]) == 80
    assert groups["torchvision.classification"] == sorted(tvm.list_models(module=tvm))
    assert groups["torchvision.quantization"] == sorted(tvm.list_models(module=tvm.quantization))
    assert len(groups["torchvision.detection"]) == len(tvm.list_models(module=tvm.detection))
    assert groups["torchvision.optical_flow"] == ["raft_large", "raft_small"]
    # Every builder appears exactly once across the torchvision groups.
    listed = [n for key, names in groups.items() if key.startswith("torchvision.") for n in names]
    assert sorted(listed) == sorted(tvm.list_models())


def test_list_filter_is_case_insensitive_substring() -> None:
    groups = list_models(filter="ResNet5")
    assert groups["torchvision.classification"] == ["resnet50", "wide_resnet50_2"]
    assert groups["torchvision.quantization"] == ["quantized_resnet50"]
    assert "fasterrcnn_resnet50_fpn" in groups["torchvision.detection"]
    assert groups["registered"] == []


@pytest.mark.parametrize(
    ("name", "shape", "kind"),
    [
        ("resnet50", (1, 3, 224, 224), "tensor"),
        ("inception_v3", (1, 3, 299, 299), "tensor"),
        ("efficientnet_b7", (1, 3, 600, 600), "tensor"),
        ("vit_h_14", (1, 3, 518, 518), "tensor"),  # DEFAULT = IMAGENET1K_SWAG_E2E_V1, crop 518
        ("r3d_18", (1, 3, 16, 112, 112), "tensor"),  # 16-frame clips at crop 112
        ("swin3d_t", (1, 3, 16, 224, 224), "tensor"),
        ("fasterrcnn_resnet50_fpn", (1, 3, 800, 800), "image_list"),
        ("ssd300_vgg16", (1, 3, 300, 300), "image_list"),
        ("fcn_resnet50", (1, 3, 520, 520), "tensor"),
        ("raft_large", (1, 3, 520, 960), "image_pair"),
        ("quantized_mobilenet_v3_large", (1, 3, 224, 224), "tensor"),
    ],
)
def test_default_input_shapes(name: str, shape: tuple[int, ...], kind: str) -> None:
    spec = resolve(name)
    assert spec.source == "torchvision"
    assert spec.default_input_shape == shape
    assert spec.input_kind == kind


@pytest.mark.parametrize(
    "name",
    [
        "resnet18",
        "vit_h_14",
        "regnet_y_128gf",  # computes its widths with tensors; built meta-safe (see _meta.py)
        "googlenet",
        "r3d_18",
        "mvit_v1_b",
        "maskrcnn_resnet50_fpn",
        "ssdlite320_mobilenet_v3_large",
        "deeplabv3_mobilenet_v3_large",
        "raft_small",
        "quantized_googlenet",
    ],
)
def test_meta_build_matches_default_weights_param_count(name: str) -> None:
    spec = resolve(name)
    module = _meta_build(spec)
    assert not module.training
    # Every parameter *and buffer* (BatchNorm's num_batches_tracked included) stays on meta.
    assert {t.device.type for t in (*module.parameters(), *module.buffers())} == {"meta"}
    # The random-weight model is the architecture the DEFAULT weights describe.
    assert _num_params(module) == tvm.get_model_weights(name).DEFAULT.meta["num_params"]


def test_builds_offline_without_backbone_weights() -> None:
    # torchvision's detection builders default to downloading ImageNet backbone weights.
    spec = resolve("fasterrcnn_resnet50_fpn")
    assert spec.default_arch_kwargs["weights_backbone"] is None
    assert resolve("quantized_resnet18").default_arch_kwargs["quantize"] is False


def test_resolution_implies_image_size_for_vit() -> None:
    spec = resolve("vit_b_16")
    assert spec.arch_kwargs_for((1, 3, 384, 384)) == {"image_size": 384}
    module = _meta_build(spec, input_shape=(1, 3, 384, 384))
    assert module.image_size == 384
    # An explicit kwarg wins over the implied one.
    assert spec.arch_kwargs_for((1, 3, 384, 384), image_size=224) == {"image_size": 224}


def test_user_arch_kwargs_reach_the_builder() -> None:
    module = _meta_build(resolve("resnet18"), num_classes=10)
    assert module.fc.out_features == 10  # type: ignore[union-attr]


def test_example_inputs_classification_on_meta() -> None:
    args, kwargs = resolve("resnet18").example_inputs(device="meta", dtype=torch.float16)
    assert kwargs == {}
    (x,) = args
    assert x.shape == (1, 3, 224, 224) and x.device.type == "meta" and x.dtype == torch.float16


def test_example_inputs_video() -> None:
    (x,), _ = resolve("r3d_18").example_inputs(device="meta")
    assert x.shape == (1, 3, 16, 112, 112)


def test_example_inputs_detection_is_a_list_of_images() -> None:
    spec = resolve("fasterrcnn_mobilenet_v3_large_320_fpn")
    (images,), _ = spec.example_inputs(input_shape=(2, 3, 320, 256), device="meta")
    assert isinstance(images, list) and len(images) == 2
    assert all(img.shape == (3, 320, 256) for img in images)


def test_detection_forward_on_cpu() -> None:
    # Small end-to-end check that the list-of-images form is what the model eats (the
    # detector resizes each image to its own 320 px internally, so the input size is free).
    spec = resolve("fasterrcnn_mobilenet_v3_large_320_fpn")
    module = spec.build()
    args, kwargs = spec.example_inputs(input_shape=(2, 3, 96, 128))
    with torch.no_grad():
        outputs = module(*args, **kwargs)
    assert len(outputs) == 2
    assert set(outputs[0]) == {"boxes", "scores", "labels"}


def test_example_inputs_raft_pair_and_size_check() -> None:
    spec = resolve("raft_small")
    (a, b), _ = spec.example_inputs(device="meta")
    assert a.shape == b.shape == (1, 3, 520, 960)
    from pytest_modelprof.errors import ModelInputError

    with pytest.raises(ModelInputError, match="multiples of 8"):
        spec.example_inputs(input_shape=(1, 3, 100, 100), device="meta")


def test_raft_forward_on_meta() -> None:
    spec = resolve("raft_small")
    module = _meta_build(spec)
    args, _ = spec.example_inputs(input_shape=(1, 3, 128, 128), device="meta")
    with torch.no_grad():
        flows = module(*args, num_flow_updates=2)
    assert flows[-1].shape == (1, 2, 128, 128)


def test_references_cover_every_weights_entry_with_ops() -> None:
    refs = torchvision_references()
    expected = {
        str(w)
        for group in (tvm, tvm.video)
        for name in tvm.list_models(module=group)
        for w in tvm.get_model_weights(name)
        if "_ops" in w.meta and "num_params" in w.meta
    }
    assert len(refs) == len(expected)
    assert {r.weights for r in refs} == expected
    assert {r.model for r in refs if r.group == "classification"} == set(
        tvm.list_models(module=tvm)
    )
    assert {r.model for r in refs if r.group == "video"} == set(tvm.list_models(module=tvm.video))


def test_reference_fields_vit_h_14_swag() -> None:
    by_weights = {r.weights: r for r in torchvision_references()}
    e2e = by_weights["ViT_H_14_Weights.IMAGENET1K_SWAG_E2E_V1"]
    assert e2e.model == "vit_h_14"
    assert e2e.input_shape == (1, 3, 518, 518)
    assert e2e.arch_kwargs == {"image_size": 518}
    assert e2e.gmacs == 1016.717
    assert e2e.num_params == 633_470_440
    linear = by_weights["ViT_H_14_Weights.IMAGENET1K_SWAG_LINEAR_V1"]
    assert linear.input_shape == (1, 3, 224, 224) and linear.arch_kwargs == {}
    video = by_weights["R3D_18_Weights.KINETICS400_V1"]
    assert video.input_shape == (1, 3, 16, 112, 112) and video.gmacs == 40.697


@pytest.mark.parametrize(
    "weights",
    [
        "ViT_B_16_Weights.IMAGENET1K_SWAG_E2E_V1",  # 384 px: positional embedding grows
        "ViT_L_16_Weights.IMAGENET1K_SWAG_E2E_V1",  # 512 px
        "RegNet_Y_16GF_Weights.IMAGENET1K_SWAG_E2E_V1",
        "GoogLeNet_Weights.IMAGENET1K_V1",  # no aux heads, as the weights ship
    ],
)
def test_reference_builds_with_the_published_param_count(weights: str) -> None:
    ref = {r.weights: r for r in torchvision_references()}[weights]
    module = _meta_build(resolve(ref.model), input_shape=ref.input_shape, **ref.arch_kwargs)
    assert _num_params(module) == ref.num_params


def test_reference_input_reproduces_published_gmacs() -> None:
    # torch's own FlopCounterMode counts 2 FLOPs per MAC; _ops is GMACs at the weights' crop.
    from torch.utils.flop_counter import FlopCounterMode

    refs = {r.weights: r for r in torchvision_references()}
    for weights in ("ResNet50_Weights.IMAGENET1K_V2", "R3D_18_Weights.KINETICS400_V1"):
        ref = refs[weights]
        spec = resolve(ref.model)
        module = _meta_build(spec, input_shape=ref.input_shape, **ref.arch_kwargs)
        args, kwargs = spec.example_inputs(ref.input_shape, device="meta")
        with FlopCounterMode(display=False) as counter, torch.no_grad():
            module(*args, **kwargs)
        assert round(counter.get_total_flops() / 2e9, 3) == ref.gmacs
