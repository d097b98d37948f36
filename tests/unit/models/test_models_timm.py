"""timm as a model source: ``timm:NAME`` names, input sizes, meta builds, errors, listing."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest
import torch

from pytest_modelprof.errors import DuplicateModelError, ModelBuildError, ModelNotFoundError
from pytest_modelprof.models import Registry, list_models, resolve
from pytest_modelprof.profile import profile_model

timm = pytest.importorskip("timm")


def test_any_list_models_name_resolves_at_its_pretrained_cfg_size() -> None:
    spec = resolve("timm:resnet50")
    assert (spec.source, spec.group, spec.input_kind) == ("timm", "timm", "tensor")
    assert spec.default_input_shape == (1, 3, 224, 224)
    # eva02_tiny_patch14_336's only config is 336 px (its position embedding is sized for it).
    assert resolve("timm:eva02_tiny_patch14_336").default_input_shape == (1, 3, 336, 336)


def test_a_tagged_name_takes_that_tags_input_size() -> None:
    assert resolve("timm:convnext_tiny").default_input_shape == (1, 3, 224, 224)
    tagged = resolve("timm:convnext_tiny.fb_in22k_ft_in1k_384")
    assert tagged.default_input_shape == (1, 3, 384, 384)
    with pytest.raises(ModelNotFoundError, match=r"no pretrained config tagged 'nope'.*fb_in1k"):
        resolve("timm:convnext_tiny.nope")


def test_builds_on_meta_with_random_weights_and_timms_param_count() -> None:
    with torch.device("meta"):
        module = resolve("timm:resnet50").build()
    assert all(p.is_meta for p in module.parameters())
    assert not module.training
    # 25,557,032: ResNet-50's published parameter count (timm and torchvision agree).
    assert sum(p.numel() for p in module.parameters()) == 25_557_032


def test_profile_model_by_name_runs_on_meta() -> None:
    p = profile_model("timm:resnet18")
    assert p.capture.mode == "meta"
    # torchvision publishes 1.814 GMACs and 11,689,512 parameters for the same architecture.
    assert p.total_params == 11_689_512
    assert round(p.total_macs / 1e9, 3) == 1.814
    assert p.uncounted_ops == []


def test_fixed_size_models_are_rebuilt_for_another_resolution() -> None:
    spec = resolve("timm:vit_tiny_patch16_224")
    assert spec.arch_kwargs_for((1, 3, 384, 384)) == {"img_size": (384, 384)}
    assert spec.arch_kwargs_for((1, 3, 224, 224)) == {}
    assert spec.arch_kwargs_for((1, 1, 224, 224)) == {"in_chans": 1}
    p224 = profile_model("timm:vit_tiny_patch16_224")
    p384 = profile_model("timm:vit_tiny_patch16_224", input_shape=(1, 3, 384, 384))
    # The position embedding grows from 197 to 577 tokens of width 192.
    assert p384.total_params - p224.total_params == (577 - 197) * 192
    # CNNs take any size without a rebuild.
    assert resolve("timm:resnet18").arch_kwargs_for((1, 3, 160, 160)) == {}


def test_arch_kwargs_reach_timm_create_model() -> None:
    with torch.device("meta"):
        module = resolve("timm:resnet18").build(num_classes=10)
    assert module.get_classifier().out_features == 10  # type: ignore[operator]


def test_weights_are_never_loaded() -> None:
    with pytest.raises(ModelBuildError, match=r"pretrained=True would load weights.*never"):
        resolve("timm:resnet18").build(pretrained=True)


def test_unknown_timm_name_suggests_close_ones() -> None:
    with pytest.raises(ModelNotFoundError) as info:
        resolve("timm:resnet5O")
    assert "did you mean 'timm:resnet50'" in str(info.value)
    assert "modelprof list --filter timm:" in str(info.value)


def test_a_bare_timm_name_suggests_the_prefixed_one() -> None:
    # convnext_atto exists in timm only; the registry points at it instead of a plain "unknown".
    with pytest.raises(ModelNotFoundError, match=r"did you mean 'timm:convnext_atto'"):
        resolve("convnext_atto")


def test_listed_under_their_own_group() -> None:
    groups = list_models()
    assert "timm:resnet50" in groups["timm"]
    assert len(groups["timm"]) == len(timm.list_models())
    tiny = ["timm:convnext_tiny", "timm:convnext_tiny_hnf"]
    assert list_models("timm:convnext_t")["timm"] == tiny


def test_the_prefix_is_reserved() -> None:
    with pytest.raises(DuplicateModelError, match="reserved"):
        Registry(entry_point_group=None).register("timm:mine", torch.nn.Identity)


def test_missing_timm_gives_install_hint() -> None:
    # sys.modules[name] = None blocks an import exactly as if the extra were not installed.
    code = textwrap.dedent(
        """
        import sys
        sys.modules["timm"] = None
        from pytest_modelprof.errors import ModelNotFoundError
        from pytest_modelprof.models import resolve
        from pytest_modelprof.models._timm import timm_names
        try:
            resolve("timm:resnet50")
        except ModelNotFoundError as exc:
            print(exc)
        print(timm_names())
        """
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "timm is not installed" in out.stdout
    assert 'pip install "pytest-modelprof[timm]"' in out.stdout
    assert out.stdout.strip().endswith("()")


def test_resolving_a_timm_name_imports_no_transformers() -> None:
    code = (
        "import sys; from pytest_modelprof.models import resolve; resolve('timm:resnet18'); "
        "print('transformers' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_modelprof_list_shows_the_hub_groups(capsys: pytest.CaptureFixture[str]) -> None:
    from pytest_modelprof.cli import main

    assert main(["list", "--filter", "convnext_tiny"]) == 0
    out = capsys.readouterr().out
    assert "timm (2)" in out and "timm:convnext_tiny_hnf" in out
    assert main(["list", "--filter", "hf:mixtral", "--json"]) == 0
    assert '"hf:mixtral"' in capsys.readouterr().out
