"""The capture: modes agree, edges are right, what is not counted is reported."""

from __future__ import annotations

from typing import Any

import pytest
import torch
import torchvision
from torch import nn

from pytest_modelprof.costs import default_registry
from pytest_modelprof.errors import ModelInputError, UncountedOpsError
from pytest_modelprof.profile import profile_model, profile_with_capture


class Residual(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(4, 4, 3, padding=1)
        self.act = nn.ReLU()
        self.unused = nn.Linear(2, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.act(self.conv(x)) + x  # the add runs in the model's own scope


def signature(model: nn.Module, mode: str, **kw: object) -> tuple[object, ...]:
    p = profile_model(model, input_shape=(1, 3, 32, 32), mode=mode, **kw)  # type: ignore[arg-type]
    return (
        p.total_flops,
        p.total_macs,
        p.total_traffic,
        p.peak_activation_bytes,
        p.activation_bytes,
        [(lr.name, lr.flops, lr.traffic) for lr in p.layers],
    )


@pytest.mark.parametrize(
    "builder", [torchvision.models.resnet18, torchvision.models.mobilenet_v3_small]
)
def test_meta_fake_real_identical(builder: object) -> None:
    model = builder()  # type: ignore[operator]
    assert signature(model, "meta") == signature(model, "fake") == signature(model, "real")


def test_counts_do_not_depend_on_grad_mode() -> None:
    model = torchvision.models.VisionTransformer(
        image_size=64, patch_size=16, num_layers=2, num_heads=2, hidden_dim=32, mlp_dim=64
    )
    x = torch.randn(1, 3, 64, 64)
    with torch.no_grad():
        a = profile_model(model, inputs=(x,), mode="real")
    b = profile_model(model, inputs=(x,), mode="real")
    c = profile_model(model, inputs=(x,), mode="meta")
    assert a.total_flops == b.total_flops == c.total_flops
    attn = {f.family: f for f in a.op_breakdown}
    assert attn["matmul"].macs > 0


def test_module_scopes_edges_and_uncalled() -> None:
    made = profile_with_capture(Residual(), input_shape=(1, 4, 8, 8), mode="meta")
    p, cap = made.profile, made.capture
    names = [layer.name for layer in p.layers]
    assert names == ["conv", "act", "(model)"]
    assert p.uncalled_modules == ["unused"]
    conv = next(op for op in cap.ops if op.op == "aten.convolution.default")
    relu = next(op for op in cap.ops if op.op.startswith("aten.relu"))
    add = next(op for op in cap.ops if op.op == "aten.add.Tensor")
    assert conv.params == ("conv.weight", "conv.bias")
    assert relu.producers == (conv.index,)
    assert add.producers == (relu.index,)  # the other input is the model input
    assert add.module == ""
    assert cap.output_ops == (add.index,)


def test_bytes_and_peak_on_a_chain() -> None:
    # x (1x4x8x8 fp32 = 1024 B) -> conv (reads x + weight 576 B + bias 16 B, writes 1024 B)
    # -> relu (reads 1024, writes 1024) -> add (reads 2048, writes 1024).
    p = profile_model(Residual(), input_shape=(1, 4, 8, 8), mode="meta")
    by_name = {layer.name: layer for layer in p.layers}
    assert (by_name["conv"].bytes_read, by_name["conv"].bytes_written) == (1024 + 576 + 16, 1024)
    assert (by_name["act"].bytes_read, by_name["act"].bytes_written) == (1024, 1024)
    assert (by_name["(model)"].bytes_read, by_name["(model)"].bytes_written) == (2048, 1024)
    # Live activations: conv out, then relu out (conv out dead after relu), then add out while
    # relu out is still read: peak 2 x 1024.
    assert p.peak_activation_bytes == 2048
    assert p.activation_bytes == 3 * 1024


def test_uncounted_ops_are_recorded_and_strict_fails() -> None:
    class Odd(nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return torch.linalg.cholesky(x @ x.mT + torch.eye(4))

    x = torch.randn(4, 4)
    p = profile_model(Odd(), inputs=(x,), mode="real")
    assert [u.op for u in p.uncounted_ops] == ["aten.linalg_cholesky_ex.default"]
    assert p.uncounted_ops[0].modules == ["(model)"]
    assert p.uncounted_ops[0].count == 1
    with pytest.raises(UncountedOpsError, match="linalg_cholesky_ex"):
        profile_model(Odd(), inputs=(x,), mode="real", fail_on_uncounted=True)


def test_wrong_input_shape_names_model_shape_and_layer() -> None:
    model = torchvision.models.resnet18()
    with pytest.raises(ModelInputError) as info:
        profile_model(model, input_shape=(1, 4, 64, 64))
    text = str(info.value)
    assert "ResNet" in text and "(1, 4, 64, 64)" in text and "'conv1' (Conv2d)" in text


def test_keyword_inputs_for_language_models() -> None:
    class TinyLM(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.emb = nn.Embedding(100, 16)
            self.head = nn.Linear(16, 100, bias=False)

        def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
            return self.head(self.emb(input_ids))

    ids = torch.randint(0, 100, (2, 7))
    p = profile_model(TinyLM(), inputs={"input_ids": ids})
    # head: 14 tokens x 16 x 100 = 22400 MACs.
    assert p.total_macs == 22400
    assert p.inputs[0].name == "input_ids" and p.inputs[0].dtype == "int64"


def test_user_module_is_not_mutated_by_meta_profiling() -> None:
    model = nn.Linear(4, 4)
    before = model.weight.detach().clone()
    p = profile_model(model, input_shape=(2, 4), device="meta")
    assert p.capture.mode == "meta"
    assert not model.weight.is_meta and torch.equal(model.weight, before)


def test_fake_falls_back_to_real_on_data_dependent_forward() -> None:
    class DataDependent(nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return x[x > 0].sum() * 2 if x.sum().item() != 0 else x

    p = profile_model(DataDependent(), input_shape=(4, 4))
    assert p.capture.mode == "real"
    assert [a.partition(":")[0] for a in p.capture.attempts] == ["meta", "fake"]
    assert "fell back" in p.capture.reason


def test_json_round_trip_is_deterministic() -> None:
    from pytest_modelprof.schema import ModelProfile

    p = profile_model(Residual(), input_shape=(1, 4, 8, 8), mode="meta")
    text = p.to_json()
    again = ModelProfile.from_json(text)
    assert again == p and again.to_json() == text
    assert text.endswith("}\n")


def test_compat_private_apis_smoke() -> None:
    from pytest_modelprof import _compat

    seen: list[str] = []
    below: list[int] = []

    class Spy(_compat.TorchDispatchMode):  # type: ignore[no-untyped-call]
        def __torch_dispatch__(
            self, func: Any, types: Any, args: Any = (), kwargs: Any = None
        ) -> Any:
            seen.append(str(func))
            below.append(_compat.dispatch_modes_below())
            return func(*args, **(kwargs or {}))

    with Spy():  # type: ignore[no-untyped-call]
        torch.ones(2) + 1
    assert "aten.add.Tensor" in seen
    assert set(below) == {0}
    below.clear()
    with Spy(), Spy():  # type: ignore[no-untyped-call]
        torch.ones(2) * 2  # the inner mode sees the outer one below it; the outer sees none
    assert below[-2:] == [1, 0]
    assert [e.__name__ for e in _compat.fake_fallback_errors()] == [
        "DataDependentOutputException",
        "DynamicOutputShapeException",
        "UnsupportedOperatorException",
        "UnsupportedFakeTensorException",
        "GuardOnDataDependentSymNode",
    ]
    with _compat.FakeTensorMode():
        t = torch.empty(2, 3)
    assert type(t).__name__ == "FakeTensor"
    d = _compat.WeakTensorKeyDictionary()
    d[t] = 1
    assert d[t] == 1
    mm = torch.ops.aten.mm
    assert [a.name for a in _compat.op_schema(mm.default).arguments] == ["self", "mat2"]
    assert mm.default in _compat.op_overloads(mm)
    assert _compat.qualified_op_name(mm) == _compat.qualified_op_name(mm.default) == "aten::mm"
    real = torch.ones(4)
    assert _compat.has_data(real) and not _compat.has_data(t)
    assert not _compat.has_data(torch.empty(2, device="meta"))
    assert _compat.view_base(real[1:]) is real and _compat.view_base(real) is None
    # Our shape rule of aten._grouped_mm, for the meta kernel that refuses float32 (torch 2.14).
    rule = _compat.own_meta_rule(torch.ops.aten._grouped_mm.default)
    assert _compat.own_meta_rule(torch.ops.aten.mm.default) is None
    offs = torch.empty(3, dtype=torch.int32, device="meta")
    a, b = torch.empty(10, 16, device="meta"), torch.empty(3, 16, 8, device="meta")
    out = rule(a, b, offs=offs)
    assert out.is_meta and out.shape == (10, 8) and out.dtype == torch.float32
    assert rule(torch.empty(3, 5, 16, device="meta"), b).shape == (3, 5, 8)
    with pytest.raises(RuntimeError, match="contraction"):
        rule(torch.empty(10, 4, device="meta"), b, offs=offs)
    with pytest.raises(RuntimeError, match="int32 offsets"):
        rule(a, b, offs=offs.long())
    key = _compat.storage_key(real.untyped_storage())
    assert key == _compat.storage_key(real[1:].untyped_storage())  # views share the storage
    ref = _compat.StorageWeakRef(real.untyped_storage())
    assert not ref.expired()
    del real
    assert ref.expired()


def test_compat_fake_tensor_apis_smoke() -> None:
    # capture/metacache.py answers fake calls itself: the fake mode below a dispatch mode, a
    # fake tensor's mode and device, and a fresh fake tensor made as fake mode's cache does.
    from pytest_modelprof import _compat

    below: list[Any] = []

    class Spy(_compat.TorchDispatchMode):  # type: ignore[no-untyped-call]
        def __torch_dispatch__(
            self, func: Any, types: Any, args: Any = (), kwargs: Any = None
        ) -> Any:
            below.append(_compat.fake_mode_below())
            return func(*args, **(kwargs or {}))

    real = torch.ones(2)
    fake = _compat.FakeTensorMode()
    with fake:
        t = torch.empty(2, 3)
        constant = torch.tensor(1.0)  # a fake tensor that knows its value
        with Spy():  # type: ignore[no-untyped-call]
            t + 1
    assert below == [fake]
    with Spy():  # type: ignore[no-untyped-call]
        torch.ones(2) + 1
    assert below[-1] is None
    assert _compat.fake_parts(t) == (fake, torch.device("cpu"))
    assert _compat.fake_parts(constant) is None
    assert _compat.fake_parts(torch.ones(2)) is None
    assert _compat.fake_device(t) == torch.device("cpu") and _compat.fake_device(real) is None
    made = _compat.new_fake_tensor(fake, (4, 5), (1, 4), torch.bfloat16, torch.device("cpu"))
    assert type(made) is type(t) and made.fake_mode is fake
    assert (made.shape, made.stride(), made.dtype, made.device) == (
        (4, 5),
        (1, 4),
        torch.bfloat16,
        torch.device("cpu"),
    )
    assert made.untyped_storage().nbytes() == 40
    with fake:
        with _compat.without_fake_mode():
            computed = real + 1  # the real kernel: a value, not a fake tensor
        assert type(t + 1) is type(t)  # the fake mode is back
    assert type(computed) is torch.Tensor and computed.tolist() == [2.0, 2.0]
    assert len(default_registry()) > 300


def test_shared_module_is_attributed_to_each_caller_and_containers_are_not_uncalled() -> None:
    class Shared(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            act = nn.ReLU()  # one object under two paths, like ultralytics' Conv.default_act
            self.blocks = nn.ModuleList(nn.Sequential(nn.Linear(4, 4), act) for _ in range(2))

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            for block in self.blocks:  # the ModuleList itself is never called
                x = block(x)
            return x

    p = profile_model(Shared(), input_shape=(2, 4), mode="meta")
    rows = {layer.name: layer for layer in p.layers}
    # Each ReLU call: 2x4 = 8 outputs, 1 FLOP each, under its own caller's path.
    assert rows["blocks.0.1"].flops == 8 and rows["blocks.1.1"].flops == 8
    assert p.uncalled_modules == []


def test_in_place_write_through_a_view_links_later_readers_of_the_base() -> None:
    class MaskFill(nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            mask = torch.zeros(4, 4)
            mask[:2] = 1.0  # writes into mask's buffer through a view of its first two rows
            return x * mask

    cap = profile_with_capture(MaskFill(), input_shape=(4, 4), mode="meta").capture
    # Torch versions lower the assignment differently (fill_, or scalar_tensor + copy_): find
    # the ops by what they do, not by name.
    (mul,) = [op for op in cap.ops if op.index in cap.output_ops]
    (zeros,) = [op for op in cap.ops if op.outputs[0].shape == (4, 4) and op is not mul]
    (view,) = [op for op in cap.ops if op.is_view and zeros.index in op.producers]
    # Per-slot producers: the model input has none; the mask's is the op that last wrote it.
    assert mul.input_producers[0] == -1
    writer = cap.ops[mul.input_producers[1]]
    assert writer.index > view.index > zeros.index  # not the op that created the mask
    assert view.index in writer.producers  # it wrote through the view ...
    assert writer.bytes_written == 2 * 4 * 4  # ... into 8 float32 elements
    assert writer.index in mul.producers
    assert cap.input_ops == (mul.index,)


def test_error_in_the_models_own_forward_says_so() -> None:
    class Flat(nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return x.view(3, 5)

    with pytest.raises(ModelInputError, match=r"in the model's own forward \(Flat\)"):
        profile_model(Flat(), input_shape=(4, 4))


def test_outputs_inside_dicts_are_model_outputs() -> None:
    # Like ultralytics' eval head: (tensor, {"boxes": ..., "scores": ...}).
    class DictOut(nn.Module):
        def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
            a = x + 1
            b = x * 2
            return a, {"b": b}

    made = profile_with_capture(DictOut(), input_shape=(4, 4), mode="meta")
    p, cap = made.profile, made.capture
    add = next(op for op in cap.ops if op.op == "aten.add.Tensor")
    mul = next(op for op in cap.ops if op.op == "aten.mul.Tensor")
    assert cap.output_ops == (add.index, mul.index)
    # Both outputs (64 B each) stay live to the end: peak 128 B.
    assert p.peak_activation_bytes == 128


class _ToNumpy(nn.Module):
    """Copies data to the host with ``.numpy()`` and sizes its output by it."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(8, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        repeats = int(x.abs().sum().detach().cpu().numpy()) % 3 + 1
        return self.fc(x).repeat(repeats, 1)


def test_numpy_in_forward_is_a_host_sync_like_item_and_falls_back_to_real() -> None:
    p = profile_model(_ToNumpy(), input_shape=(2, 8))
    assert p.capture.mode == "real"
    assert p.total_macs > 0


@pytest.mark.parametrize("model", [Residual(), nn.LSTM(4, 6)], ids=["conv", "lstm"])
def test_a_running_only_pass_runs_the_ops_and_records_none(model: nn.Module) -> None:
    # The LLM cache-fill pass: its outputs are needed, its costs are not the profile's. The LSTM
    # goes through RecurrentOnMeta, which pauses the dispatch hook on its own.
    from pytest_modelprof.capture.tracer import Tracer

    meta = model.to("meta")
    x = torch.empty(2, 4, 8, 8, device="meta") if isinstance(model, Residual) else None
    x = x if x is not None else torch.empty(3, 2, 4, device="meta")
    tracer = Tracer(meta, default_registry())
    with torch.no_grad(), tracer.running_only():  # no_grad: the LSTM is one op, as for an LLM
        out = meta(x)
    capture = tracer.finish()
    first = out[0] if isinstance(out, tuple) else out
    assert first.shape[:2] == x.shape[:2]  # the ops ran
    assert (len(capture.ops), list(capture.modules)) == (0, [])
    # A counted pass over the same module records its ops (the test is not vacuous).
    counted = Tracer(meta, default_registry())
    with torch.no_grad(), counted.tracing():
        meta(x)
    assert len(counted.finish().ops) > 0


def test_compat_module_registries_smoke() -> None:
    from pytest_modelprof._compat import module_registries, registries_state

    # A None entry is kept (the public iterators skip it): a stand-in copy must keep it too.
    m = nn.Linear(2, 3, bias=False)
    m.register_buffer("scale", None)
    m.add_module("extra", None)
    parameters, buffers, modules = module_registries(m)
    assert (list(parameters.items()), buffers, modules) == (
        [("weight", m.weight), ("bias", None)],
        {"scale": None},
        {"extra": None},
    )
    copy: nn.Linear = object.__new__(nn.Linear)
    vars(copy).update({**vars(m), **registries_state({"weight": m.weight}, {}, {})})
    assert module_registries(copy) == ({"weight": m.weight}, {}, {})
    assert list(copy.named_parameters()) == [("weight", m.weight)]
