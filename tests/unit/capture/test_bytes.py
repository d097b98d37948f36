"""Bytes and dataflow edges: what an op really reads and writes."""

from __future__ import annotations

import torch
from torch import nn

from pytest_modelprof.capture.record import OpRecord
from pytest_modelprof.profile import Profiled, profile_model, profile_with_capture


def ops_of(p: Profiled) -> list[OpRecord]:
    return [op for op in p.capture.ops if not op.is_view]


class Like(nn.Module):
    def __init__(self, make: str) -> None:
        super().__init__()
        self.make = make

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = x * 2  # 64 float32 = 256 B
        fn = getattr(torch, self.make)
        made = fn(h, 3.0) if self.make == "full_like" else fn(h)
        return made + 1


def test_like_ops_read_no_data_and_depend_on_nothing() -> None:
    for make in ("zeros_like", "empty_like", "ones_like", "full_like", "rand_like", "randn_like"):
        p = profile_with_capture(Like(make), input_shape=(8, 8), mode="meta")
        mul, like, add = ops_of(p)
        # zeros_like(h) looks at h's shape only: it reads 0 bytes, writes 256, and does not wait
        # for the op that produced h (no dataflow edge, so stages and critical path are right).
        assert (like.bytes_read, like.bytes_written) == (0, 256), make
        assert like.producers == () and like.inputs == (), make
        assert add.producers == (like.index,), make


def test_new_zeros_reads_no_data() -> None:
    class New(nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            h = x * 2
            return h.new_zeros((4, 4)) + 1  # 16 float32 = 64 B written

    p = profile_with_capture(New(), input_shape=(8, 8), mode="meta")
    _, new, _ = ops_of(p)
    assert (new.bytes_read, new.bytes_written, new.producers) == (0, 64, ())


def test_out_destination_is_written_not_read() -> None:
    class Out(nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            buf = x * 0  # 256 B: the destination, produced by the mul
            torch.add(x, 1.0, out=buf)  # reads x (256 B), writes buf (256 B)
            return buf

    p = profile_with_capture(Out(), input_shape=(8, 8), mode="real")
    mul, add = ops_of(p)
    assert (add.bytes_read, add.bytes_written) == (256, 256)
    assert add.producers == ()  # overwriting buf does not read what the mul wrote


def test_unread_secondary_outputs_are_still_written() -> None:
    class Max(nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return x.max(dim=1).values  # the indices are never read

    # x (64, 10) float32; max over dim 1: values 64 x 4 B = 256 B + indices 64 x 8 B = 512 B.
    p = profile_with_capture(Max(), input_shape=(64, 10), mode="meta")
    (op,) = ops_of(p)
    assert (op.bytes_read, op.bytes_written) == (2560, 768)
    assert p.profile.total_traffic == 2560 + 768


def test_batch_norm_save_statistics_nothing_reads_are_not_traffic() -> None:
    # Training batch norm on 2x4x3x3 (72 floats = 288 B): it writes its output (288 B) and the
    # running statistics in place; the save_mean/save_invstd outputs (kernel-specific sizes)
    # are dropped when nothing reads them, so every device reports the same bytes.
    bn = nn.BatchNorm2d(4)
    p = profile_with_capture(bn, input_shape=(2, 4, 3, 3), mode="meta", include_backward=False)
    norm = [op for op in ops_of(p) if op.family == "norm"]
    assert [op.bytes_written for op in norm] == [288]


def test_unbatched_adaptive_pool_counts_every_window() -> None:
    # (3, 8, 8) -> (3, 2, 2): each output row/column sums a window of 4, so per channel
    # (4 + 4) x (4 + 4) = 64 additions: 3 x 64 = 192 FLOPs (the batched (1, 3, 8, 8) count).
    batched = profile_model(nn.AdaptiveAvgPool2d(2), input_shape=(1, 3, 8, 8), mode="meta")
    unbatched = profile_model(nn.AdaptiveAvgPool2d(2), input_shape=(3, 8, 8), mode="meta")
    assert batched.total_flops == unbatched.total_flops == 192
    one_d = profile_model(nn.AdaptiveMaxPool1d(2), input_shape=(3, 8), mode="meta")
    assert one_d.total_flops == 3 * 8  # windows 4 + 4 per channel
