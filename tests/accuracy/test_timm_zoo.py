"""A timm zoo by name, against FlopCounterMode on the same attention path and exact parameters.

``ZOO`` holds 113 architectures: the smallest model (parameters on meta) of each of timm's 98
model modules (families), a real one where a module also holds ``test_*`` models, plus 15 common
ones (resnet50, convnext_tiny, vit_base_patch16_224, efficientnet_b0, ...). Each is profiled by
name (``timm:NAME``: ``pretrained=False``, its ``pretrained_cfg`` input size, built on meta) and
must have

- parameters equal to ``sum(p.numel())`` of the same architecture built on meta (building 113
  models with real weights would take minutes), and
- MACs within 1 % of ``torch.utils.flop_counter.FlopCounterMode`` (FLOPs / 2) on the same meta
  model and inputs, with SDPA on its math path for both (``canonical_kernels``).

The default run checks the ``QUICK`` subset (conv, depthwise, attention, windowed attention,
MLP-mixer, squeeze-excite, a hybrid); the whole zoo runs with ``-m zoo`` (12 minutes on 2 busy
cores, ``sequencer2d_s`` alone 2: its LSTM decomposes per step on meta)::

    python -m pytest tests/accuracy/test_timm_zoo.py -m zoo -n 2 -p no:randomly
"""

from __future__ import annotations

import pytest

from pytest_modelprof.profile import profile_model

timm = pytest.importorskip("timm")

ZOO = (
    "beit_base_patch16_224",
    "cait_xxs24_224",
    "coat_tiny",
    "convit_tiny",
    "convmixer_768_32",
    "convnext_tiny",
    "convnext_zepto_rms",
    "convnextv2_atto",
    "cpubone_nano",
    "crossvit_tiny_240",
    "cs3darknet_focus_s",
    "csatv2",
    "cspnext_tiny",
    "davit_tiny",
    "deepseek_vit_412m",
    "deit_small_patch16_224",
    "deit_tiny_patch16_224",
    "densenet121",
    "dla46x_c",
    "dpn48b",
    "edgenext_xx_small",
    "efficientformer_l1",
    "efficientformerv2_s0",
    "efficientnet_b0",
    "efficientnetv2_rw_t",
    "efficientvim_m1",
    "efficientvit_b0",
    "efficientvit_m0",
    "ese_vovnet19b_slim_dw",
    "eva02_tiny_patch14_224",
    "fasternet_t0",
    "fastvit_t8",
    "focalnet_tiny_srf",
    "gcvit_xxtiny",
    "gemma4_vit_167m",
    "ghostnet_050",
    "gmlp_ti16_224",
    "halonet_h1",
    "hardcorenas_b",
    "hgnetv2_b0",
    "hiera_tiny_224",
    "hrnet_w18_small",
    "iformer_t",
    "inception_next_atto",
    "inception_resnet_v2",
    "inception_v3",
    "inception_v4",
    "lcnetv2_small",
    "legacy_seresnet18",
    "legacy_xception",
    "levit_128s",
    "lowformer_b0",
    "mambaout_femto",
    "maxvit_pico_rw_256",
    "mixer_b16_224",
    "mobilenetv2_035",
    "mobilenetv3_large_100",
    "mobilenetv3_small_050",
    "mobilenetv4_conv_small",
    "mobilenetv5_base",
    "mobileone_s1",
    "mobilevit_xxs",
    "mvitv2_tiny",
    "naflexvit_base_patch16_parfac_gap",
    "nasnetalarge",
    "nest_tiny",
    "nextvit_small",
    "nf_regnet_b0",
    "pit_ti_224",
    "pnasnet5large",
    "poolformerv2_s12",
    "pvt_v2_b0",
    "qwen3_vit_88m",
    "rdnet_tiny",
    "regnetx_002",
    "regnety_016",
    "repghostnet_050",
    "repvit_m1",
    "res2next50",
    "resmlp_12_224",
    "resnest14d",
    "resnet10t",
    "resnet50",
    "resnetv2_18",
    "rexnet_100",
    "sam2_hiera_tiny",
    "samvit_base_patch16_224",
    "selecsls42",
    "sequencer2d_s",
    "seresnext26d_32x4d",
    "shvit_s1",
    "skresnet18",
    "starnet_s050",
    "swiftformer_xs",
    "swin_tiny_patch4_window7_224",
    "swinv2_cr_tiny_224",
    "swinv2_tiny_window16_256",
    "tiny_vit_5m_224",
    "tnt_s_legacy_patch16_224",
    "tresnet_m",
    "twins_svt_small",
    "vgg11",
    "visformer_tiny",
    "vit_base_patch16_224",
    "vit_small_patch16_224",
    "vit_srelpos_small_patch16_224",
    "vit_tiny_patch16_224",
    "vit_tiny_patch16_dinov3_qkvb",
    "vit_tiny_r_s16_p8_224",
    "vitamin_small_224",
    "volo_d1_224",
    "xception41p",
    "xcit_nano_12_p8_224",
)

QUICK = frozenset(
    {
        "resnet50",
        "convnext_tiny",
        "deit_tiny_patch16_224",
        "efficientnet_b0",
        "mixer_b16_224",
        "swin_tiny_patch4_window7_224",
        "mobilevit_xxs",
        "levit_128s",
        "inception_v3",
    }
)


def _params() -> list[object]:
    return [pytest.param(name, marks=pytest.mark.zoo(quick=name in QUICK), id=name) for name in ZOO]


def test_the_zoo_spans_timms_families() -> None:
    assert len(set(ZOO)) == len(ZOO) >= 100
    assert QUICK <= set(ZOO)
    module_of = {n: m for m in timm.list_modules() for n in timm.list_models(module=m)}
    assert set(ZOO) <= set(module_of)
    assert len({module_of[n] for n in ZOO}) >= 95  # of timm's 98 model modules (families)


@pytest.mark.parametrize("name", _params())
def test_params_exact_and_macs_match_flop_counter(name: str) -> None:
    import torch
    from torch.utils.flop_counter import FlopCounterMode

    from pytest_modelprof.models import resolve
    from pytest_modelprof.profile import canonical_kernels

    ours = profile_model(f"timm:{name}")
    assert ours.capture.mode == "meta"
    assert ours.uncounted_ops == []

    spec = resolve(f"timm:{name}")
    with torch.device("meta"):
        model = spec.build()
    assert ours.total_params == sum(p.numel() for p in model.parameters())

    args, kwargs = spec.example_inputs(device="meta")
    # NB: with grad enabled: FlopCounterMode's module tracker fails under no_grad on modules
    # that take a tuple holding a parameter (pit, cait: "Expected gradient function to be set").
    with canonical_kernels(), FlopCounterMode(display=False) as counter:
        model(*args, **kwargs)
    reference = counter.get_total_flops() // 2
    assert reference > 0
    assert abs(ours.total_macs - reference) <= 0.01 * reference, (
        f"timm:{name}: ours {ours.total_macs:,} MACs, FlopCounterMode {reference:,}"
    )
