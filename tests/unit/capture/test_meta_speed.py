"""Meta kernels run once per distinct call (capture/metacache.py), with every number unchanged."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import torch
import torchvision
from torch import nn
from torch.utils.flop_counter import FlopCounterMode

from pytest_modelprof._compat import TorchDispatchMode
from pytest_modelprof.profile import profile_model, profile_with_capture


def test_repeated_meta_kernels_run_once_per_distinct_call() -> None:
    # Speed itself is measured in benchmarks/bench_default_mode.py, not here: a
    # meta capture runs each distinct kernel call once; resnet18's repeated blocks repeat calls.
    from pytest_modelprof.capture import metacache

    user = torchvision.models.resnet18().eval()
    x = torch.randn(1, 3, 224, 224)
    metacache.clear()
    before = metacache.cache_stats()
    first = profile_model(user, inputs=(x,), mode="meta")
    mid = metacache.cache_stats()
    assert mid["hits"] > before["hits"]  # repeats inside one forward are answered already
    assert mid["entries"] > 0
    second = profile_model(user, inputs=(x,), mode="meta")
    after = metacache.cache_stats()
    assert after["misses"] == mid["misses"]  # the second capture runs no meta kernel again
    assert second.total_flops == first.total_flops and second.total_traffic == first.total_traffic


class _Passthrough(TorchDispatchMode):  # type: ignore[no-untyped-call]
    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        return func(*args, **(kwargs or {}))


class _Strided(nn.Module):
    """Ops whose outputs are not plain contiguous tensors, and integer true division."""

    def __init__(self) -> None:
        super().__init__()
        self.norm = nn.LayerNorm(8)
        self.bn = nn.BatchNorm1d(6)

    def forward(self, x: torch.Tensor) -> Any:
        y = self.norm(x.transpose(1, 2))  # a non-contiguous input
        z = self.bn(y) * 2
        counts = torch.ones(3, dtype=torch.int64, device=x.device)
        w = (z.permute(2, 0, 1) + 1).sum(0) / 3  # a permuted result, reduced
        return w, counts / torch.ones_like(counts)  # int / int: the default dtype


@pytest.mark.parametrize(
    "build, inputs",
    [
        (lambda: torchvision.models.resnet18(), lambda: (torch.randn(1, 3, 64, 64),)),
        (
            lambda: torchvision.models.VisionTransformer(32, 8, 2, 2, 16, 32, num_classes=5),
            lambda: (torch.randn(2, 3, 32, 32),),
        ),
        (_Strided, lambda: (torch.randn(2, 8, 6),)),
    ],
    ids=["resnet18", "vit", "strided"],
)
def test_repeated_meta_captures_give_identical_profiles(
    build: Callable[[], nn.Module], inputs: Callable[[], tuple[torch.Tensor, ...]]
) -> None:
    # The second capture reuses what the first learnt; every number must equal those of a
    # capture that ran every meta kernel (under another dispatch mode the table is bypassed),
    # also in training mode (backward), and fake mode's.
    torch.manual_seed(0)
    module = build().eval()
    x = inputs()
    with _Passthrough():  # type: ignore[no-untyped-call]
        reference = profile_model(module, inputs=x).model_dump()
        reference_train = profile_model(module, inputs=x, include_backward=True).model_dump()
    first = profile_model(module, inputs=x).model_dump()
    assert first == reference
    assert profile_model(module, inputs=x).model_dump() == first
    train = profile_model(module, inputs=x, include_backward=True).model_dump()
    assert train == reference_train
    assert profile_model(module, inputs=x, include_backward=True).model_dump() == train
    fake = profile_model(module, inputs=x, mode="fake")
    assert (fake.total_macs, fake.total_traffic) == (first["total_macs"], first["total_traffic"])


def test_integer_true_division_follows_the_default_dtype_of_each_call() -> None:
    # counts / ones: int64 / int64 gives the default dtype, which the second call changes.
    module = _Strided().eval()
    x = torch.randn(2, 8, 6)
    written = []
    for dtype in (torch.float32, torch.float64):
        previous = torch.get_default_dtype()
        torch.set_default_dtype(dtype)
        try:
            capture = profile_with_capture(module, inputs=(x,)).capture
        finally:
            torch.set_default_dtype(previous)
        last = capture.ops[-1]
        assert last.op.startswith("aten.div")
        written.append((last.outputs[0].dtype, last.bytes_written))
    assert written == [("float32", 12), ("float64", 24)]


def test_a_dispatch_mode_around_the_capture_still_sees_every_op() -> None:
    # A caller's own mode (here FlopCounterMode) around profile_model counts the same on the
    # second call as on the first: nothing is answered past it.
    torch.manual_seed(0)
    module = torchvision.models.resnet18().eval()
    x = torch.randn(1, 3, 64, 64)
    counted = []
    for _ in range(2):
        with FlopCounterMode(display=False) as counter:
            profile = profile_model(module, inputs=(x,))
        counted.append(counter.get_total_flops())
    assert counted[0] == counted[1] == 2 * profile.total_macs


def test_only_plain_strided_meta_calls_are_kept() -> None:
    from pytest_modelprof.capture import metacache

    add = torch.ops.aten.add.Tensor
    meta = torch.empty(3, 3, device="meta")
    key, out = metacache.lookup(add, (meta, meta), {})
    assert key is not None and out is None  # first time: the caller runs the kernel
    metacache.remember(key, add(meta, meta), ((meta, meta), {}))
    again = metacache.lookup(add, (meta, meta), {})[1]
    assert again.is_meta and again.shape == (3, 3) and again.stride() == (3, 1)
    indices = torch.zeros(2, 0, dtype=torch.long)
    sparse = torch.sparse_coo_tensor(indices, torch.zeros(0), (3, 3), check_invariants=True)
    real = torch.ones(3, 3)
    for args in [(sparse.to("meta"), sparse.to("meta")), (real, real), (meta, real)]:
        assert metacache.lookup(add, args, {}) == (None, None)
    view = torch.ops.aten.t.default  # its result aliases its argument: never answered
    assert metacache.lookup(view, (meta,), {}) == (None, None)


def test_an_output_sharing_its_input_storage_is_not_answered_fresh() -> None:
    # aten._unsafe_view returns its input's storage, and its schema does not say so: a fresh
    # tensor from the table would count as new memory in fit/tracker.py.
    from pytest_modelprof._compat import storage_key
    from pytest_modelprof.capture import metacache

    unsafe_view = torch.ops.aten._unsafe_view.default
    meta = torch.empty(4, 6, device="meta")
    for _ in range(2):
        key, out = metacache.lookup(unsafe_view, (meta, [24]), {})
        if out is None:
            out = unsafe_view(meta, [24])
            if key is not None:
                metacache.remember(key, out, ((meta, [24]), {}))
        assert storage_key(out.untyped_storage()) == storage_key(meta.untyped_storage())


def test_fake_calls_of_the_memory_estimate_are_answered_with_every_figure_unchanged() -> None:
    # Why: fake mode's own cache key costs about what the kernel does; the fit
    # tracker lets the table answer pure calls on fake tensors. Under a caller's mode the table
    # is bypassed (every call reaches fake mode): the reference.
    from pytest_modelprof.capture import metacache
    from pytest_modelprof.fit import StepOptions, estimate_memory

    arch = {
        "num_hidden_layers": 3,
        "hidden_size": 64,
        "intermediate_size": 128,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "vocab_size": 256,
    }
    opts = StepOptions(precision="bf16-mixed", device_count=4, shard="zero3")

    def estimate() -> dict[str, Any]:
        e = estimate_memory("hf:llama", seq_len=16, options=opts, mode="fake", **arch)
        return e.model_dump(exclude={"ops"})

    with _Passthrough():  # type: ignore[no-untyped-call]
        reference = estimate()
    metacache.clear()
    before = metacache.cache_stats()
    assert estimate() == reference
    assert metacache.cache_stats()["hits"] > before["hits"]  # layers 2 and 3 repeat layer 1


def test_fake_views_are_answered_as_views_of_the_same_storage() -> None:
    # On the fake path the table also answers views (aten.t, aten.slice) and aten._unsafe_view
    # (which shares its input's storage without saying so): the result is a view of the very
    # input's storage, so the tracker counts no new memory.
    from pytest_modelprof._compat import FakeTensorMode, storage_key
    from pytest_modelprof.capture import metacache
    from pytest_modelprof.fit.tracker import LifetimeTracker

    metacache.clear()
    before = metacache.cache_stats()["hits"]
    with FakeTensorMode():
        x = torch.empty(4, 6)
        with LifetimeTracker([x]) as tracker:
            outs = []
            for _ in range(2):
                outs.append((x.t(), x[1:3], torch.ops.aten._unsafe_view.default(x, [24]), x * 2))
    assert metacache.cache_stats()["hits"] - before == 4  # the second round, all four
    for t, sliced, flat, doubled in outs:
        key = storage_key(x.untyped_storage())
        assert storage_key(t.untyped_storage()) == key and t.stride() == (1, 6)
        assert storage_key(sliced.untyped_storage()) == key and sliced.storage_offset() == 6
        assert storage_key(flat.untyped_storage()) == key and flat.shape == (24,)
        assert storage_key(doubled.untyped_storage()) != key
    assert [a.nbytes for a in tracker.log] == [96, 96]  # only the two products are new
