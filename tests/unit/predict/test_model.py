"""The kernel-time formula, the GPU table and the errors of a prediction."""

from __future__ import annotations

import pytest
from torch import nn

from pytest_modelprof.machines import GPUS, resolve_gpu, resolve_machine
from pytest_modelprof.predict import PredictionError, predict, predict_profile
from pytest_modelprof.predict.kernels import CLASSES, Kernel
from pytest_modelprof.predict.model import ClassConstants, Constants, kernel_time
from pytest_modelprof.profile import profile_model

FLAT = Constants(
    {
        c: ClassConstants(compute_efficiency=0.5, memory_efficiency=0.8, overhead_s=5e-6)
        for c in CLASSES
    },
    gemm_k_half=16.0,
    gemm_n_half=0.0,
)


def test_a_big_matmul_is_compute_bound_at_the_tensor_core_peak() -> None:
    t = kernel_time(Kernel("matmul", 1e12, 1e9), GPUS["rtx4090"], "amp", FLAT)
    # compute 1e12 / (165.2e12 * 0.5) = 12.107 ms; memory 1e9 / (1008e9 * 0.8) = 1.240 ms
    assert t.bound == "compute"
    assert t.seconds == pytest.approx(1e12 / (165.2e12 * 0.5) + 5e-6)


def test_an_elementwise_kernel_is_memory_bound_and_fp32_matmuls_use_cuda_cores() -> None:
    t = kernel_time(Kernel("elementwise", 1e9, 8e9, count=2), GPUS["a100-80gb"], "amp", FLAT)
    # memory 2 * 8e9 / (2039e9 * 0.8) = 9.81 ms beats compute 2 * 1e9 / (19.5e12 * 0.5)
    assert t.bound == "memory"
    assert t.seconds == pytest.approx(2 * 8e9 / (2039e9 * 0.8) + 2 * 5e-6)
    fp32 = kernel_time(Kernel("matmul", 1e12, 0.0), GPUS["a100-80gb"], "fp32", FLAT)
    assert fp32.compute_s == pytest.approx(1e12 / (19.5e12 * 0.5))


def test_a_narrow_gemm_loses_efficiency() -> None:
    wide = kernel_time(
        Kernel("conv", 1e12, 0.0, gemm_k=1 << 20, gemm_n=64), GPUS["h100"], "amp", FLAT
    )
    narrow = kernel_time(Kernel("conv", 1e12, 0.0, gemm_k=16, gemm_n=64), GPUS["h100"], "amp", FLAT)
    # K = 16 = k_half: twice the time of an (almost) unbounded K
    assert narrow.compute_s / wide.compute_s == pytest.approx(2.0, rel=1e-4)


def test_the_gpu_table_has_the_cards_and_old_preset_names_resolve() -> None:
    for name in (
        "t4",
        "l4",
        "a10",
        "a100-40gb",
        "a100-80gb",
        "h100",
        "h200",
        "b200",
        "rtx3090",
        "rtx4090",
        "rtx5090",
        "rtx-pro-6000",
        "rtx-pro-6000-maxq",
        "l40s",
    ):
        gpu = GPUS[name]
        assert gpu.fp16_tensor >= gpu.fp32 and gpu.bandwidth > 0 and gpu.sm_count > 0
    assert resolve_gpu("h100-bf16").name == "h100"
    assert resolve_machine("rtx4090").peak_flops == GPUS["rtx4090"].fp16_tensor
    assert resolve_machine("a100-bf16").name == "a100-bf16"  # the old presets are kept
    with pytest.raises(ValueError, match="did you mean 'rtx4090'"):
        resolve_gpu("rtx4900")


def test_prediction_errors_name_the_culprit() -> None:
    profile = profile_model(nn.Linear(8, 8), input_shape=(2, 8), mode="meta")
    with pytest.raises(PredictionError, match="unknown precision 'fp8'.*amp"):
        predict_profile(profile, "h100", precision="fp8")
    with pytest.raises(PredictionError, match="unknown GPU 'h1000'"):
        predict_profile(profile, "h1000")
    loaded = type(profile).from_json(profile.to_json())
    with pytest.raises(PredictionError, match="profile the model again"):
        predict_profile(loaded, "h100")


def test_a_prediction_adds_up_and_scales_with_the_gpu() -> None:
    profile = profile_model(
        nn.Sequential(nn.Linear(256, 1024), nn.GELU(), nn.Linear(1024, 256)),
        input_shape=(64, 256),
        mode="meta",
    )
    assert profile._capture is not None
    slow = predict(profile._capture, "t4", batch=64, constants=FLAT)
    fast = predict(profile._capture, "h100", batch=64, constants=FLAT)
    assert fast.forward_ms < slow.forward_ms
    assert sum(slow.bound_shares.values()) == pytest.approx(1.0)
    assert slow.samples_per_s == pytest.approx(64 / (slow.forward_ms / 1e3))
    assert slow.training_step_estimated and slow.training_step_ms == pytest.approx(
        3 * slow.forward_ms
    )
    # 2 matmuls, a GELU and 5 casts: x, W and bias of the first linear, W and bias of the
    # second (its input, the GELU's output, is fp16 already): 8 kernels
    assert slow.kernels == 8
    assert sum(k.ms for k in slow.top_kernels) == pytest.approx(slow.forward_ms)
