"""Module scopes: independent of an exception being handled, and of other threads."""

from __future__ import annotations

import threading

import torch
import torchvision
from torch import nn

from pytest_modelprof.profile import profile_model
from pytest_modelprof.schema import ModelProfile


def layers(p: ModelProfile) -> list[tuple[str, int, int, int]]:
    return [(lr.name, lr.calls, lr.flops, lr.traffic) for lr in p.layers]


class Two(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.a = nn.Linear(4, 4)
        self.b = nn.Linear(4, 4)
        # Threads to run between a and b (a list, so the module's state does not change).
        self.handoff: list[threading.Thread] = []

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.a(x)
        while self.handoff:  # another thread runs layer b right now, to completion
            thread = self.handoff.pop()
            thread.start()
            thread.join()
        return self.b(x)


def test_profiling_inside_an_except_block_counts_every_call() -> None:
    model = torchvision.models.resnet18()
    clean = profile_model(model, input_shape=(1, 3, 32, 32), mode="meta")
    try:
        raise RuntimeError("an exception being handled while the profile runs")
    except RuntimeError:
        inside = profile_model(model, input_shape=(1, 3, 32, 32), mode="meta")
    assert layers(inside) == layers(clean)
    calls = {lr.name: lr.calls for lr in inside.layers}
    # conv1 runs once; layer1.0.relu is one ReLU object called twice per block.
    assert calls["conv1"] == 1 and calls["layer1.0.relu"] == 2


def test_a_layer_that_fails_is_named_and_the_stack_unwinds() -> None:
    class Bad(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.ok = nn.Linear(4, 4)
            self.inner = nn.Sequential(nn.Linear(4, 4), nn.Linear(5, 4))

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.inner(self.ok(x))

    import pytest

    from pytest_modelprof.errors import ModelInputError

    with pytest.raises(ModelInputError, match=r"at layer 'inner\.1' \(Linear\)"):
        profile_model(Bad(), input_shape=(2, 4), mode="meta")


def test_another_thread_running_the_same_model_does_not_touch_the_scopes() -> None:
    model = Two()
    x = torch.randn(2, 4)
    alone = profile_model(model, inputs=(x,))
    # While the capture runs (between layers a and b), another thread runs layer b for real.
    other = threading.Thread(target=lambda: model.b(torch.randn(3, 4)))
    model.handoff.append(other)
    during = profile_model(model, inputs=(x,))
    # The other thread did run (popped from the copy's list: the module's own is not touched).
    assert other.ident is not None and not other.is_alive()
    assert model.handoff == [other]
    assert layers(during) == layers(alone)
    assert {lr.name: lr.calls for lr in during.layers} == {"a": 1, "b": 1}


def test_two_threads_profiling_at_once_get_single_threaded_counts() -> None:
    resnet = torchvision.models.resnet18().eval()
    mobile = torchvision.models.mobilenet_v3_small()
    shape = (1, 3, 32, 32)
    expected = {
        "resnet": layers(profile_model(resnet, input_shape=shape)),
        "mobile": layers(profile_model(mobile, input_shape=shape)),
    }
    got: dict[str, list[list[tuple[str, int, int, int]]]] = {"resnet": [], "mobile": []}
    errors: list[BaseException] = []
    start = threading.Barrier(3)

    def work(key: str, model: nn.Module) -> None:
        try:
            start.wait()
            for _ in range(3):
                got[key].append(layers(profile_model(model, input_shape=shape)))
        except BaseException as exc:  # surfaced below
            errors.append(exc)

    threads = [
        threading.Thread(target=work, args=("resnet", resnet)),
        threading.Thread(target=work, args=("mobile", mobile)),
    ]
    for t in threads:
        t.start()
    # ... and this thread keeps running resnet18 itself (as a server would) meanwhile.
    start.wait()
    with torch.no_grad():
        while any(t.is_alive() for t in threads):
            resnet(torch.randn(*shape))
    for t in threads:
        t.join()
    assert errors == []
    assert got["resnet"] == [expected["resnet"]] * 3
    assert got["mobile"] == [expected["mobile"]] * 3


def test_overlapping_captures_in_two_threads_restore_the_kernel_switches() -> None:
    # The MHA fast path and the SDPA backends are process-wide switches. Two captures that
    # overlap (A enters, B enters, A leaves, B leaves) must leave them as they were; the second
    # to enter used to save A's canonical setting as "previous" and restore it at the end.
    from pytest_modelprof.profile import canonical_kernels

    def flags() -> tuple[bool, bool, bool]:
        return (
            torch.backends.mha.get_fastpath_enabled(),
            torch.backends.cuda.flash_sdp_enabled(),
            torch.backends.cuda.mem_efficient_sdp_enabled(),
        )

    before = flags()
    assert before[0]  # the default: fast path on
    a_in, b_in, a_out = threading.Event(), threading.Event(), threading.Event()
    during_b: list[tuple[bool, bool, bool]] = []

    def a() -> None:
        with canonical_kernels():
            a_in.set()
            b_in.wait(10)
        a_out.set()

    def b() -> None:
        a_in.wait(10)
        with canonical_kernels():
            b_in.set()
            a_out.wait(10)
            during_b.append(flags())

    threads = [threading.Thread(target=a), threading.Thread(target=b)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert during_b == [(False, False, False)]  # still canonical while B captures
    assert flags() == before
