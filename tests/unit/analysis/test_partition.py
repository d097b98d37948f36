"""Fusion rules on small hand-written modules, with the fused bytes derived by hand."""

from __future__ import annotations

import pytest
import torch
from fusion_examples import Cloned, ConvBnRelu, Tapped
from partition_checks import check_partition
from torch import nn

from pytest_modelprof.analysis.partition import (
    PartitionReport,
    PartitionSummary,
    partition,
)
from pytest_modelprof.profile import profile_with_capture
from pytest_modelprof.report.partition_text import render_partition_report
from pytest_modelprof.schema import ModelProfile


def run(model: nn.Module, **kw: object) -> tuple[ModelProfile, PartitionReport]:
    kw.setdefault("input_shape", (1, 8, 16, 16))
    made = profile_with_capture(model, **kw)  # type: ignore[arg-type]
    report = partition(made.capture)
    check_partition(report, made)
    return made.profile, report


def test_conv_norm_activation_is_one_subgraph_with_fused_bytes() -> None:
    profile, report = run(ConvBnRelu())
    (sg,) = report.subgraphs
    assert sg.kind == "conv" and sg.pattern == "conv+norm+activation"
    # Reads: x 1*8*16*16*4 = 8192, weight 16*8*3*3*4 = 4608, bn weight/bias/mean/var 4*16*4 = 256.
    assert sg.bytes_read == 8192 + 4608 + 256 == 13056
    # Writes: only the relu output 1*16*16*16*4 = 16384; conv and bn outputs stay on chip.
    assert sg.bytes_written == 16384
    # Unfused: conv 12800+16384, bn 16640+16384, relu 16384+16384 = 94976.
    assert sg.unfused_bytes == profile.total_traffic == 94976
    assert sg.parallelism.output_elements == 16 * 16 * 16
    assert (sg.parallelism.batch, sg.parallelism.channels, sg.parallelism.spatial) == (1, 16, 256)
    assert not sg.parallelism.depthwise and sg.parallelism.groups == 1
    assert sg.params == 8 * 16 * 9 + 2 * 16


@pytest.mark.parametrize("broken", [Tapped, Cloned])
def test_broken_fusion_costs_subgraphs_and_bytes_not_flops(broken: type[nn.Module]) -> None:
    fused_profile, fused = run(ConvBnRelu())
    broken_profile, split = run(broken())
    assert broken_profile.total_flops == fused_profile.total_flops
    assert len(split.subgraphs) == len(fused.subgraphs) + 1 == 2
    # The conv output is written (16384) and read back by the norm (16384).
    assert split.fused_bytes == fused.fused_bytes + 2 * 16384
    assert split.fused_arithmetic_intensity < fused.fused_arithmetic_intensity
    assert split.summary().num_subgraphs > fused.summary().num_subgraphs


class Attention(nn.Module):
    def forward(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        return torch.softmax(q @ k.transpose(-2, -1) * 0.5, dim=-1) @ v


def test_matmul_softmax_matmul_is_one_attention_subgraph() -> None:
    q, k, v = (torch.randn(1, 2, 8, 4) for _ in range(3))
    _, report = run(Attention(), inputs=(q, k, v), input_shape=None)
    (sg,) = report.subgraphs
    assert sg.kind == "attention"
    assert sg.pattern == "matmul+elementwise+softmax+matmul"
    assert report.kind_counts == {"attention": 1}
    # Reads q, k, v (3 * 2*8*4*4 = 768), writes the 2*8*4 output (256); the 2x8x8 scores stay.
    assert (sg.bytes_read, sg.bytes_written) == (768, 256)


class Branches(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.a = nn.Conv2d(4, 4, 1)
        self.b = nn.Conv2d(4, 4, 1)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        y = torch.sigmoid(x)
        return self.a(y), self.b(y)


class PointwiseFork(nn.Module):
    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        y = torch.sigmoid(x)
        return y * 2, y + 1


class Swish(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(4, 4, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y: torch.Tensor = self.conv(x)
        return y * torch.sigmoid(y)


def test_tensor_read_by_two_kernels_ends_the_chain() -> None:
    _, report = run(Branches(), input_shape=(1, 4, 8, 8))
    assert [s.pattern for s in report.subgraphs] == ["activation", "conv", "conv"]
    assert report.subgraphs[1].depends_on == [0] and report.subgraphs[2].depends_on == [0]
    assert report.concurrency.stage_sizes == [1, 2] and report.concurrency.max_parallel == 2
    # The sigmoid output (1*4*8*8*4 = 1024 B) is written once and read by both convs.
    assert report.subgraphs[0].bytes_written == 1024


def test_pointwise_readers_of_one_tensor_fuse_into_one_kernel() -> None:
    # sigmoid, *2 and +1 run as one kernel with two outputs: y never reaches memory.
    _, report = run(PointwiseFork(), input_shape=(2, 16))
    (sg,) = report.subgraphs
    assert sg.pattern == "activation+elementwise"
    assert (sg.bytes_read, sg.bytes_written) == (2 * 16 * 4, 2 * 2 * 16 * 4)


def test_two_readers_in_one_subgraph_still_fuse() -> None:
    _, report = run(Swish(), input_shape=(1, 4, 8, 8))
    (sg,) = report.subgraphs
    assert sg.pattern == "conv+activation+elementwise"
    # x 1*4*8*8*4 = 1024, weight 4*4*4 = 64, bias 16 in; the product (1024) out.
    assert (sg.bytes_read, sg.bytes_written) == (1024 + 64 + 16, 1024)


class Depthwise(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.dw = nn.Conv2d(8, 8, 3, padding=1, groups=8)
        self.grouped = nn.Conv2d(8, 8, 3, padding=1, groups=2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out: torch.Tensor = self.grouped(self.dw(x))
        return out


def test_depthwise_and_grouped_convs() -> None:
    _, report = run(Depthwise())
    dw, grouped = report.subgraphs
    assert (dw.parallelism.groups, dw.parallelism.depthwise) == (8, True)
    assert (grouped.parallelism.groups, grouped.parallelism.depthwise) == (2, False)
    assert report.depthwise_convs == 1


class ViewsOnly(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.view(-1).t()


def test_views_only_model_is_one_subgraph() -> None:
    _, report = run(ViewsOnly(), input_shape=(4, 4))
    assert len(report.subgraphs) == 1 and report.fused_bytes == 0


def test_summary_and_rendering() -> None:
    _, report = run(Tapped())
    summary = report.summary()
    assert summary == PartitionSummary.model_validate_json(summary.model_dump_json())
    assert (summary.num_subgraphs, summary.num_stages, summary.max_parallel) == (2, 2, 1)
    assert summary.critical_path_length == 2
    text = render_partition_report(report, title="tapped")
    assert text.startswith("Partition of tapped: 2 subgraphs")
    for needle in ("Fusion patterns:", "Concurrency: 2 stages", "Critical path: 2 subgraphs",
                   "Top 2 subgraphs by FLOPs:", "traffic, fused"):
        assert needle in text
    assert PartitionReport.model_validate_json(report.model_dump_json()) == report


def test_machine_sets_the_bottleneck() -> None:
    capture = profile_with_capture(ConvBnRelu(), input_shape=(1, 8, 16, 16)).capture
    # AI = 610304 FLOPs / 29440 B = 20.7 FLOP/B: compute-bound at balance 10, memory at 100.
    low = partition(capture, 10.0).subgraphs[0]
    high = partition(capture, 100.0).subgraphs[0]
    assert low.arithmetic_intensity == pytest.approx(610304 / 29440)
    assert (low.bottleneck, high.bottleneck) == ("compute-bound", "memory-bound")


class Classifier(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(8, 4, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.softmax(self.fc(x), dim=-1)


def test_linear_then_softmax_is_not_attention() -> None:
    # The mm reads the weight through t(): still a linear layer, so softmax stays apart.
    _, report = run(Classifier(), input_shape=(2, 8))
    assert [s.kind for s in report.subgraphs] == ["matmul", "softmax"]
