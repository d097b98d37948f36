"""The partitioner's validation on real architectures: universal checks, then expected ranges."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from partition_checks import check_graph, check_partition

from pytest_modelprof.analysis.partition import PartitionReport, partition
from pytest_modelprof.exports.graph import build_graph
from pytest_modelprof.profile import Profiled

Zoo = Callable[[str], Profiled]


def report_of(made: Profiled) -> PartitionReport:
    return partition(made.capture)


@pytest.mark.parametrize("name", ["resnet18", "mobilenet_v2", "vit_b_16"])
def test_universal_checks(zoo_profile: Zoo, name: str) -> None:
    made = zoo_profile(name)
    capture = made.capture
    check_partition(report_of(made), made)
    check_graph(build_graph(capture, detail=True, name=name), capture, dag=True)
    check_graph(build_graph(capture, detail=False, name=name), capture, dag=False)


def test_resnet18(zoo_profile: Zoo) -> None:
    report = report_of(zoo_profile("resnet18"))
    # 20 convs (17 in the stem and blocks, 3 downsample), each fused with its norm; then
    # maxpool, the global mean and the classifier.
    assert report.kind_counts == {"conv": 20, "matmul": 1, "pool": 1, "reduction": 1}
    assert report.pattern_counts["conv+norm+activation"] == 9  # stem + first conv of 8 blocks
    assert report.pattern_counts["conv+norm+elementwise+activation"] == 8  # residual adds
    assert report.pattern_counts["conv+norm"] == 3  # downsample branches
    # The downsample branches are the only parallelism: 3 stages hold two subgraphs.
    assert report.concurrency.max_parallel == 2
    assert report.concurrency.stage_sizes.count(2) == 3
    assert report.concurrency.num_stages == 20
    assert report.critical_path.share > 0.95
    # At 64x64 the 46.8 MB of weights dominate the traffic; fusion removes the activations'.
    assert report.fused_bytes < 0.95 * report.unfused_bytes
    stem = report.subgraphs[0]
    # Stem: x 3*64*64*4 = 49152, weight 64*3*7*7*4 = 37632, bn 4*64*4 = 1024 read;
    # one 64*32*32*4 = 262144 output written instead of three.
    assert (stem.bytes_read, stem.bytes_written) == (49152 + 37632 + 1024, 262144)


def test_mobilenet_v2_depthwise(zoo_profile: Zoo) -> None:
    report = report_of(zoo_profile("mobilenet_v2"))
    assert report.kind_counts["conv"] == 52
    assert report.depthwise_convs == 17  # one per inverted residual block
    depthwise = [s for s in report.subgraphs if s.parallelism.depthwise]
    assert all(s.parallelism.groups == s.parallelism.channels for s in depthwise)
    assert report.pattern_counts["conv+norm+elementwise"] == 10  # residual projections
    assert report.concurrency.max_parallel == 1  # a chain: residuals fuse into their convs
    # Depthwise convs do little arithmetic per byte.
    assert max(s.arithmetic_intensity for s in depthwise) < report.fused_arithmetic_intensity * 2


def test_vit_b_16_attention_blocks(zoo_profile: Zoo) -> None:
    report = report_of(zoo_profile("vit_b_16"))
    attention = [s for s in report.subgraphs if s.kind == "attention"]
    assert len(attention) == 12  # one per encoder layer
    assert all(s.pattern == "matmul+softmax+matmul" for s in attention)
    assert all(s.module.endswith("self_attention") for s in attention)
    # qkv projection, out projection and two MLP linears per layer, plus the head.
    assert report.kind_counts["matmul"] == 12 * 4 + 1
    assert report.kind_counts["norm"] == 25  # two per layer and the final one
    gelu = report.pattern_counts["matmul+activation"]
    assert gelu == 12
    # The 197x197 score matrices never reach memory: 12 heads * 197^2 * 4 B per layer saved.
    scores = 12 * 197 * 197 * 4
    assert all(s.unfused_bytes - s.memory >= 2 * scores for s in attention)


def _yolo_profile() -> Profiled:
    from pytest_modelprof.profile import profile_with_capture

    try:
        return profile_with_capture("yolov8n.yaml", input_shape=(1, 3, 320, 320))
    except ImportError:  # the model registry has not landed: build it with ultralytics
        tasks = pytest.importorskip("ultralytics.nn.tasks", reason="ultralytics is not installed")
        model = tasks.DetectionModel("yolov8n.yaml", verbose=False)
        return profile_with_capture(model, input_shape=(1, 3, 320, 320), name="yolov8n.yaml")


def test_yolov8n_graph_has_no_dangling_nodes() -> None:
    made = _yolo_profile()
    capture = made.capture
    report = report_of(made)
    check_partition(report, made)
    check_graph(build_graph(capture, detail=True), capture, dag=True)
    check_graph(build_graph(capture, detail=False), capture, dag=False)
    assert 55 <= report.kind_counts["conv"] <= 75
    assert report.kind_counts["interpolate"] == 2  # the two upsamples of the neck
    assert report.concurrency.max_parallel >= 2  # the detect head's branches run side by side
