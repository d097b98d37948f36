"""Terminal renderers: 100-column layout, middle abbreviation, and what-was-not-counted sections."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from pytest_modelprof.profile import Profiled, profile_model, profile_with_capture
from pytest_modelprof.report.listings import render_fvcore, render_model_list
from pytest_modelprof.report.terminal import (
    format_shape,
    render_profile,
    render_table,
)
from pytest_modelprof.runtime.fvcore import FvcoreComparison
from pytest_modelprof.schema import ModelProfile
from pytest_modelprof.textfit import ELLIPSIS, cut_middle
from pytest_modelprof.units import format_bytes, format_count

WIDTH = 100


def _widest(text: str) -> int:
    return max(len(line) for line in text.splitlines())


class _Deep(nn.Module):
    """Long, deeply nested module names (like YOLO's ``model.22.cv3.0.0.conv``), one unused
    branch, and one op (FFT) that has no cost formula."""

    def __init__(self) -> None:
        super().__init__()
        inner = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU())
        self.a_rather_long_backbone_stage_name = nn.ModuleDict(
            {"cross_stage_partial_block_with_a_long_name": nn.Sequential(inner)}
        )
        self.head = nn.Linear(8, 4)
        self.never_called_auxiliary_classifier = nn.Linear(8, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        block = self.a_rather_long_backbone_stage_name["cross_stage_partial_block_with_a_long_name"]
        y = block(x).mean(dim=(2, 3))
        spectrum: torch.Tensor = torch.fft.rfft(y).abs()
        out: torch.Tensor = self.head(y) + spectrum[:, :4]
        return out


@pytest.fixture(scope="module")
def deep() -> Profiled:
    return profile_with_capture(_Deep(), input_shape=(1, 3, 16, 16), name="deep")


@pytest.fixture(scope="module")
def deep_profile(deep: Profiled) -> ModelProfile:
    return deep.profile


# -- abbreviate --------------------------------------------------------------------------------

@pytest.mark.parametrize(
    ("name", "width", "expected"),
    [
        ("layer1.0.conv1", 20, "layer1.0.conv1"),  # fits: unchanged
        ("model.22.cv3.0.0.conv", 19, "model.22.cv3.0" + ELLIPSIS + "conv"),
        # The tail is capped at half the width so the head stays readable.
        ("backbone.stage.a_very_long_leaf_name", 12, "backbo" + ELLIPSIS + "_name"),
        ("abcdef", 1, ELLIPSIS),
        ("abcdef", 0, ""),
    ],
)
def test_cut_middle(name: str, width: int, expected: str) -> None:
    assert cut_middle(name, width) == expected
    assert len(cut_middle(name, width)) == min(len(name), width)


def test_format_shape() -> None:
    assert format_shape([1, 64, 32, 32]) == "1x64x32x32"
    assert format_shape([]) == "scalar"
    assert format_shape(None) == "-"


# -- tables ------------------------------------------------------------------------------------

def test_render_table_shrinks_the_name_column_to_fit() -> None:
    long = "model." + ".".join(f"stage{i}" for i in range(30)) + ".conv"
    lines = render_table(["Layer", "FLOPs"], [[long, "1.2 GFLOPs"], ["fc", "4 MFLOPs"]], width=60)
    assert all(len(line) <= 60 for line in lines)
    assert ELLIPSIS in lines[1] and lines[1].split()[0].endswith("conv")
    assert lines[2].split() == ["fc", "4", "MFLOPs"]  # short names are untouched


def test_render_table_keeps_tree_indentation_when_abbreviating() -> None:
    rows = [["model", "1"], ["      " + "x" * 60, "2"]]
    lines = render_table(["Module", "N"], rows, width=40)
    assert lines[2].startswith("        x")  # table indent + the tree indentation
    assert all(len(line) <= 40 for line in lines)


def test_render_table_never_exceeds_the_width_even_when_nothing_can_shrink() -> None:
    lines = render_table(["A", "B"], [["x" * 10, "y" * 80]], width=50)
    assert all(len(line) <= 50 for line in lines)


# -- the profile -------------------------------------------------------------------------------

def test_profile_report_fits_100_columns(deep: Profiled) -> None:
    for verbose in (False, True):
        for show_shape in (False, True):
            text = render_profile(
                deep.profile, verbose=verbose, show_shape=show_shape, capture=deep.capture
            )
            assert _widest(text) <= WIDTH, (verbose, show_shape)


def test_profile_summary_numbers_carry_units(deep_profile: ModelProfile) -> None:
    text = render_profile(deep_profile)
    assert format_count(deep_profile.total_macs, "MACs") in text
    assert format_count(deep_profile.total_flops, "FLOPs") in text
    assert format_bytes(deep_profile.total_traffic) in text
    assert format_bytes(deep_profile.peak_activation_bytes) in text
    assert "10 FLOPs/B (generic" in text  # the machine balance used
    assert "meta tensors" in text  # capture mode and why


def test_long_names_are_abbreviated_in_the_middle(deep_profile: ModelProfile) -> None:
    text = render_profile(deep_profile, top=20)
    full = "a_rather_long_backbone_stage_name.cross_stage_partial_block_with_a_long_name.0.0"
    assert any(layer.name == full for layer in deep_profile.layers)  # full name in the data
    assert full not in text
    assert f"{ELLIPSIS}0" in text  # the head and the leaf survive, the middle goes


def test_not_counted_sections_are_always_shown(deep_profile: ModelProfile) -> None:
    text = render_profile(deep_profile, top=0)
    assert "Uncounted ops: 1 ATen ops" in text
    assert "aten._fft_r2c.default" in text
    assert f"Uncalled modules: {len(deep_profile.uncalled_modules)} defined" in text
    assert "never_called_auxiliary_classifier" in text


def test_verbose_tree_nests_children_under_parents(deep: Profiled) -> None:
    deep_profile = deep.profile
    text = render_profile(deep_profile, verbose=True, show_shape=True, capture=deep.capture)
    tree = text.split("Module tree")[1].splitlines()
    root = next(line for line in tree if line.startswith("  deep "))
    relu = next(line for line in tree if " ReLU " in line)
    indent = len(relu) - len(relu.lstrip())
    assert indent > len(root) - len(root.lstrip())
    # Subtree totals: the root row carries the whole model's FLOPs.
    assert format_count(deep_profile.total_flops, "FLOPs") in root
    assert "1x8x16x16" in relu  # --showshape: the ReLU's output shape


def test_verbose_without_capture_lists_layers_flat(deep_profile: ModelProfile) -> None:
    loaded = ModelProfile.from_json(deep_profile.to_json())
    text = render_profile(loaded, verbose=True)
    assert "Module tree" not in text
    assert f"All {len(loaded.layers)} layers" in text
    assert _widest(text) <= WIDTH


def test_backward_splits_forward_and_backward() -> None:
    profile = profile_model(nn.Linear(16, 8), input_shape=(4, 16), include_backward=True)
    text = render_profile(profile)
    assert f"backward {format_count(profile.backward_macs, 'MACs')}" in text
    assert profile.backward_macs > 0


def test_profile_report_is_deterministic(deep: Profiled) -> None:
    twice = [render_profile(deep.profile, verbose=True, capture=deep.capture) for _ in range(2)]
    assert twice[0] == twice[1]


# -- the model list ----------------------------------------------------------------------------

def test_model_list_columns_fit_the_width_and_count() -> None:
    groups = {"torchvision.classification": [f"model_{i:03d}" for i in range(50)],
              "ultralytics": ["yolov8n", "yolo11n"]}
    text = render_model_list(groups, width=60)
    assert _widest(text) <= 60
    assert text.startswith("52 models from 2 sources")
    assert "torchvision.classification (50)" in text and "ultralytics (2)" in text
    assert len(text.splitlines()) < 30  # columns, not one name per line


def test_model_list_empty_filter() -> None:
    assert "no models matching 'zzz'" in render_model_list({"a": []}, filter="zzz")


# -- the fvcore table --------------------------------------------------------------------------

def test_fvcore_table_verdicts_and_skipped_ops() -> None:
    close = FvcoreComparison("resnet50", (1, 3, 224, 224), 4_089_184_256, 4_111_514_624,
                             unsupported_ops={"aten::add_": 16, "aten::max_pool2d": 1})
    far = FvcoreComparison("vit_b_16", (1, 3, 224, 224), 17_563_067_904, 16_848_500_736,
                           unsupported_ops={"aten::scaled_dot_product_attention": 12})
    text = render_fvcore([close, far], tolerance=0.03, failures={"bad": "fvcore could not trace"})
    rows = {line.split()[0]: line for line in text.splitlines() if line.startswith("  ")}
    # |4.089 - 4.112| / 4.112 = 0.54 % -> 99.46 % agreement.
    assert "4.089" in rows["resnet50"] and "4.112" in rows["resnet50"]
    assert "99.46 %" in rows["resnet50"] and rows["resnet50"].rstrip().endswith("ok")
    # (17.563 - 16.849) / 16.849 = 4.24 % > 3 %.
    assert "+715 MMACs" in rows["vit_b_16"] and rows["vit_b_16"].rstrip().endswith("OVER")
    assert "aten::scaled_dot_product_attention x12" in text
    assert "ERROR" in rows["bad"] and "bad: fvcore could not trace" in text
    assert _widest(text) <= WIDTH


def test_fvcore_comparison_zero_counts() -> None:
    assert FvcoreComparison("m", None, 0, 0).within(0.0)
    only_ours = FvcoreComparison("m", None, 5, 0)
    assert not only_ours.within(10.0) and only_ours.agreement == 0.0


def test_plain_writes_control_characters_as_escapes() -> None:
    from pytest_modelprof.textfit import fit_line, plain

    hostile = "a\x1b[2Jb\rc\u202ed\x00e\x9bf\tg\nh\u200bi"
    # Newline, tab and a zero-width space are text; the rest is shown as its escape.
    assert plain(hostile) == "a\\x1b[2Jb\\rc\\u202ed\\x00e\\x9bf\tg\nh\u200bi"
    assert plain(plain(hostile)) == plain(hostile)
    assert fit_line("test_x[\x1b[31m]", 100) == ["test_x[\\x1b[31m]"]


def test_a_layer_name_cannot_drive_the_terminal() -> None:
    net = nn.Sequential()
    net.add_module("evil\x1b[2J\u202e", nn.Linear(4, 4))
    text = render_profile(profile_model(net, input_shape=(1, 4)), verbose=True)
    assert "\x1b" not in text and "\u202e" not in text
    assert "evil\\x1b[2J\\u202e" in text
