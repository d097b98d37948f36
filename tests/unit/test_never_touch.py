"""Profiling never changes the user's module: in every mode, with or without backward, on failure.

A property test over a zoo of aliasing patterns (a submodule at two paths, tied parameters, a
buffer shared by two modules, parametrizations, weight norm, spectral norm, lazy modules, caches
in the module's own dicts and lists, ...) and every capture mode. Before and after
``profile_model`` the module tree must hold the very same tensor objects with the same devices,
dtypes, values, ``requires_grad``, version counters (no in-place write at all) and gradients,
the same training flags, hooks and attributes. Attributes are snapshotted by value: a container
(dict, list, set, deque, also inside a plain object) is compared by its contents, not by
reference, so a forward that writes into the user's container is seen.
"""

from __future__ import annotations

import collections
import random
import types
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy
import pytest
import torch
from torch import nn
from torch.nn.modules.lazy import LazyModuleMixin
from torch.nn.utils import parametrize

from pytest_modelprof._compat import module_registries
from pytest_modelprof.errors import GlobalStateWarning, ModelprofError
from pytest_modelprof.profile import profile_model

# nn.Module's own containers of hooks (their names differ between torch versions).
_HOOK_DICTS = sorted(k for k, v in vars(nn.Module()).items() if "hook" in k and v is not None)


_LAZY = (nn.parameter.UninitializedParameter, nn.parameter.UninitializedBuffer)


def _tensor_state(t: torch.Tensor) -> tuple[Any, ...]:
    values = None if t.is_meta or isinstance(t, _LAZY) else (t.detach().clone())
    return (
        t,  # the object itself: compared by identity
        type(t),
        t.device,
        t.dtype,
        tuple(t.shape) if not isinstance(t, _LAZY) else None,
        t.requires_grad,
        t._version,  # any in-place write bumps it, even one that restores the values
        t.grad if t.is_leaf else None,  # a computed tensor (weight norm) has none to read
        values,
    )


@dataclass(frozen=True, eq=False)
class Same:
    """Compares by identity: the very same object must still be there."""

    obj: Any

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Same) and self.obj is other.obj

    def __hash__(self) -> int:
        return id(self.obj)


_OPAQUE = (types.FunctionType, types.BuiltinFunctionType, types.ModuleType, type, nn.Module)


def by_value(value: Any, depth: int = 0) -> Any:
    """``value`` as a snapshot that a later write into it cannot change.

    A container is held by identity *and* by a copy of its contents (recursively), so both a
    replaced and a mutated container show; a plain object's ``__dict__`` likewise. Tensors are
    held by identity with a copy of their state; modules by identity (they are snapshotted at
    their own path).
    """
    if depth > 6:
        return Same(value)
    if isinstance(value, torch.Tensor):
        return (Same(value), _tensor_state(value))
    if isinstance(value, dict):
        items = tuple((k, by_value(v, depth + 1)) for k, v in value.items())
        return (Same(value), type(value), items)
    if isinstance(value, (list, collections.deque)):
        return (Same(value), type(value), tuple(by_value(v, depth + 1) for v in value))
    if isinstance(value, (set, frozenset)):
        return (Same(value), type(value), frozenset(value))
    if isinstance(value, tuple):
        return (type(value), tuple(by_value(v, depth + 1) for v in value))
    if isinstance(value, _OPAQUE) or not hasattr(value, "__dict__"):
        return Same(value) if not isinstance(value, (int, float, str, bytes)) else value
    return (Same(value), type(value), by_value(vars(value), depth + 1))


def _dynamo_entries(m: nn.Module) -> int:
    """Compiled entries Dynamo holds for the module's forward (a reset or recompile shows)."""
    from pytest_modelprof._compat import dynamo_cache_entries

    forward = getattr(type(m).forward, "__code__", None)
    return dynamo_cache_entries(forward) if forward is not None else 0


_TREE = ("_parameters", "_buffers", "_modules")


def snapshot(model: nn.Module) -> dict[str, Any]:
    """Everything a profiler could change, per module path (shared modules appear at each)."""
    state: dict[str, Any] = {}
    for path, m in model.named_modules(remove_duplicate=False):
        state[f"{path}:object"] = m
        state[f"{path}:class"] = type(m)
        state[f"{path}:training"] = m.training
        state[f"{path}:attributes"] = {
            k: by_value(v) for k, v in vars(m).items() if k not in _TREE and k not in _HOOK_DICTS
        }
        if isinstance(m, LazyModuleMixin):
            state[f"{path}:lazy"] = m.has_uninitialized_params()  # type: ignore[misc]
        state[f"{path}:compiled"] = _dynamo_entries(m)
        for hooks in _HOOK_DICTS:
            state[f"{path}:{hooks}"] = list(getattr(m, hooks).items())
        parameters, buffers, modules = module_registries(m)
        for name, p in parameters.items():
            state[f"{path}.{name}:param"] = None if p is None else _tensor_state(p)
        for name, b in buffers.items():
            state[f"{path}.{name}:buffer"] = None if b is None else _tensor_state(b)
        for name, sub in modules.items():
            state[f"{path}.{name}:module"] = sub
    return state


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, torch.Tensor) or isinstance(b, torch.Tensor):
        return a is b
    if isinstance(a, tuple) and isinstance(b, tuple):
        return len(a) == len(b) and all(_values_equal(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return bool(a is b or a == b)


def _values_equal(x: Any, y: Any) -> bool:
    if isinstance(x, torch.Tensor) and isinstance(y, torch.Tensor) and x is not y:
        # Snapshots of values: clones, compared by content (NaN-free by construction).
        return x.shape == y.shape and x.dtype == y.dtype and bool(torch.equal(x, y))
    return _same(x, y)


def differences(before: dict[str, Any], after: dict[str, Any]) -> list[str]:
    keys = sorted(before.keys() | after.keys())
    return [k for k in keys if k not in before or k not in after or not _same(before[k], after[k])]


# -- the zoo --------------------------------------------------------------------------------


class SharedSubmodule(nn.Module):
    """One Linear registered at two paths (timm's coat_tiny does this)."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(8, 8)
        self.alias = self.lin
        self.out = nn.Linear(8, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.out(self.alias(torch.relu(self.lin(x))))


class TiedParameters(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.emb = nn.Embedding(16, 8)
        self.head = nn.Linear(8, 16, bias=False)
        self.head.weight = self.emb.weight

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        return self.head(self.emb(ids))


class Scaled(nn.Module):
    def __init__(self, scale: torch.Tensor) -> None:
        super().__init__()
        self.lin = nn.Linear(8, 8)
        self.register_buffer("scale", scale)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.lin(x) * self.scale


class SharedBuffer(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        scale = torch.full((8,), 0.5)
        self.a = Scaled(scale)
        self.b = Scaled(scale)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.b(self.a(x))


class Symmetric(nn.Module):
    def forward(self, w: torch.Tensor) -> torch.Tensor:
        return w.triu() + w.triu(1).transpose(-1, -2)


def parametrized() -> nn.Module:
    model = nn.Sequential(nn.Linear(8, 8), nn.ReLU(), nn.Linear(8, 4))
    parametrize.register_parametrization(model[0], "weight", Symmetric())
    return model


def old_weight_norm() -> nn.Module:
    # The hook-based weight norm recomputes ``weight`` as a plain attribute in a pre-hook.
    with pytest.warns(FutureWarning):
        lin = nn.utils.weight_norm(nn.Linear(8, 8))
    return nn.Sequential(lin, nn.ReLU(), nn.Linear(8, 4))


def new_weight_norm() -> nn.Module:
    lin = nn.utils.parametrizations.weight_norm(nn.Linear(8, 8))
    return nn.Sequential(lin, nn.ReLU(), nn.Linear(8, 4))


def spectral_norm() -> nn.Module:
    # Power iteration updates the u/v buffers in place on every training-mode forward.
    model = nn.Sequential(nn.utils.spectral_norm(nn.Linear(8, 8)), nn.ReLU(), nn.Linear(8, 4))
    return model.train()


class BatchNormNet(nn.Module):
    """Training mode updates running statistics in place; dropout draws random numbers."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3, padding=1)
        self.bn = nn.BatchNorm2d(4)
        self.drop = nn.Dropout(0.5)
        self.fc = nn.Linear(4, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.drop(torch.relu(self.bn(self.conv(x))))
        return self.fc(h.mean(dim=(2, 3)))


class Raises(nn.Module):
    """The model's own error, after the first layer ran."""

    def __init__(self) -> None:
        super().__init__()
        self.bn = nn.BatchNorm1d(8)
        self.lin = nn.Linear(8, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.lin(self.bn(x))
        raise ValueError("this model is broken on purpose")


class DataDependent(nn.Module):
    """Needs values: meta and fake tensors cannot run it, real tensors can."""

    def __init__(self) -> None:
        super().__init__()
        self.bn = nn.BatchNorm1d(8)
        self.lin = nn.Linear(8, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.lin(self.bn(x))
        return h[h > 0].sum() if float(h.abs().sum()) > 0 else h.sum()


class CountsCalls(nn.Module):
    """A forward that writes Python state onto the module."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(8, 8)
        self.calls = 0

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.calls += 1
        self.last_shape = tuple(x.shape)
        return self.lin(x)


class _Rotary:
    """A plain object (not a module) holding a cache, as rotary-embedding helpers do."""

    def __init__(self) -> None:
        self.tables: dict[int, torch.Tensor] = {}
        self.recent: collections.deque[int] = collections.deque(maxlen=4)


class CachesInContainers(nn.Module):
    """A forward that caches tensors in the module's own dicts and lists.

    The mask cache starts with a real tensor the user computed; the call log, the nested dict
    of lists, the set and the plain object's dict and deque start empty.
    """

    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(8, 8)
        self.masks: dict[int, torch.Tensor] = {8: torch.ones(8, 8)}
        self.calls: list[tuple[int, ...]] = []
        self.nested: dict[str, list[torch.Tensor]] = {"outputs": []}
        self._seen: set[int] = set()
        self.rotary = _Rotary()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        n = x.shape[-1]
        self.calls.append(tuple(x.shape))
        self._seen.add(x.shape[0])
        table = self.rotary.tables.get(n)
        if table is None:
            table = self.rotary.tables[n] = torch.eye(n, device=x.device, dtype=x.dtype)
        self.rotary.recent.append(n)
        out = self.lin(x) * table.diagonal() + self.masks[n][0]  # elementwise: device-checked
        self.nested["outputs"].append(out.detach())
        return out


def hooked() -> nn.Module:
    model = nn.Sequential(nn.Linear(8, 8), nn.ReLU(), nn.Linear(8, 4))
    seen: list[int] = []
    model[0].register_forward_hook(lambda m, i, o: seen.append(1))
    model.register_forward_pre_hook(lambda m, i: None)
    return model


def frozen_and_half_trained() -> nn.Module:
    model = nn.Sequential(nn.Linear(8, 8), nn.ReLU(), nn.Linear(8, 4))
    model[0].requires_grad_(False)
    model[2].weight.grad = torch.ones_like(model[2].weight)  # a gradient already accumulated
    return model


def embedding_max_norm() -> nn.Module:
    # max_norm renormalises the looked-up rows of the weight in place during forward.
    return nn.Sequential(nn.Embedding(16, 8, max_norm=0.1), nn.Linear(8, 4))


def lazy() -> nn.Module:
    return nn.Sequential(nn.LazyLinear(8), nn.ReLU(), nn.Linear(8, 4))


@dataclass(frozen=True)
class Case:
    make: Callable[[], nn.Module]
    inputs: Callable[[], Any]
    fails: bool = False  # the model itself cannot run (any mode)


def _x() -> torch.Tensor:
    return torch.randn(4, 8)


def _ids() -> torch.Tensor:
    return torch.randint(0, 16, (2, 5))


ZOO: dict[str, Case] = {
    "shared_submodule": Case(SharedSubmodule, _x),
    "tied_parameters": Case(TiedParameters, _ids),
    "shared_buffer": Case(SharedBuffer, _x),
    "parametrize": Case(parametrized, _x),
    "old_weight_norm": Case(old_weight_norm, _x),
    "new_weight_norm": Case(new_weight_norm, _x),
    "spectral_norm": Case(spectral_norm, _x),
    "batch_norm_dropout": Case(lambda: BatchNormNet().train(), lambda: torch.randn(2, 3, 6, 6)),
    "forward_raises": Case(Raises, _x, fails=True),
    "data_dependent": Case(DataDependent, _x),
    "writes_python_state": Case(CountsCalls, _x),
    "caches_in_containers": Case(CachesInContainers, _x),
    "fx_graph_module": Case(
        lambda: torch.fx.symbolic_trace(nn.Sequential(nn.Linear(8, 8), nn.ReLU())), _x
    ),
    "hooks": Case(hooked, _x),
    "frozen_and_grad": Case(frozen_and_half_trained, _x),
    "embedding_max_norm": Case(embedding_max_norm, _ids),
    "lazy_module": Case(lazy, _x),
}
MODES = ["meta", "fake", "real", "auto"]


def _profile(model: nn.Module, inputs: Any, mode: str, backward: bool) -> None:
    try:
        profile_model(
            model,
            inputs=(inputs,),
            mode=mode,  # type: ignore[arg-type]
            include_backward=backward,
        )
    except ModelprofError:
        # Failing is allowed where a mode cannot run the model (data-dependent code on meta);
        # changing the module is not.
        pass


@pytest.mark.parametrize("backward", [False, True], ids=["forward", "backward"])
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", sorted(ZOO))
def test_profiling_never_changes_the_module(name: str, mode: str, backward: bool) -> None:
    case = ZOO[name]
    torch.manual_seed(0)
    model = case.make()
    inputs = case.inputs()
    before = snapshot(model)
    rng = torch.get_rng_state()
    grad_mode = torch.is_grad_enabled()
    _profile(model, inputs, mode, backward)
    assert differences(before, snapshot(model)) == []
    assert torch.equal(torch.get_rng_state(), rng)  # dropout on real tensors drew no numbers
    assert torch.is_grad_enabled() == grad_mode


def test_shared_submodule_keeps_its_weights_on_meta() -> None:
    # Seen before: the next real forward failed with "Tensor on device meta is not on the
    # expected device cpu!" because functional_call left meta tensors in the aliased module.
    model = SharedSubmodule()
    x = torch.randn(4, 8)
    expected = model(x)
    p = profile_model(model, inputs=(x,), mode="meta")
    assert p.capture.mode == "meta"
    assert all(t.device.type == "cpu" for t in model.state_dict().values())
    torch.testing.assert_close(model(x), expected)
    # Shared weights are counted once; the second call of the shared Linear is counted again.
    assert p.total_params == 8 * 8 + 8 + 8 * 4 + 4
    assert p.total_macs == 4 * (8 * 8 + 8 * 8 + 8 * 4)


@pytest.mark.parametrize("mode", MODES)
def test_a_forward_that_caches_leaves_the_users_containers_alone(mode: str) -> None:
    # Seen before: the copy shared the module's dicts and lists, so the capture wrote meta
    # tensors into the user's caches and the user's own forward then failed with "Tensor on
    # device meta is not on the expected device cpu".
    model = CachesInContainers()
    x = torch.randn(4, 8)
    profile_model(model, inputs=(x,), mode=mode)  # type: ignore[arg-type]
    out = model(x)  # the user's first forward fills the caches from scratch
    assert out.device.type == "cpu"
    assert model.calls == [(4, 8)] and model._seen == {4}
    assert [t.device.type for t in model.nested["outputs"]] == ["cpu"]
    assert list(model.masks) == [8] and not model.masks[8].is_meta
    assert [t.device.type for t in model.rotary.tables.values()] == ["cpu"]
    assert list(model.rotary.recent) == [8]


def test_a_failed_capture_leaves_the_module_as_it_was() -> None:
    model = Raises()
    before = snapshot(model)
    for mode in MODES:
        with pytest.raises(ModelprofError, match="broken on purpose"):
            profile_model(model, input_shape=(4, 8), mode=mode)  # type: ignore[arg-type]
    assert differences(before, snapshot(model)) == []


def test_timm_coat_tiny_keeps_its_weights() -> None:
    timm = pytest.importorskip("timm")
    model = timm.create_model("coat_tiny", pretrained=False).eval()
    before = snapshot(model)
    p = profile_model(model, input_shape=(1, 3, 224, 224), mode="meta")
    assert p.total_params == sum(t.numel() for t in model.parameters())
    assert differences(before, snapshot(model)) == []
    assert not any(t.is_meta for t in model.state_dict().values())


def _lazy_with_caches() -> nn.Module:
    return nn.Sequential(nn.LazyLinear(8), CachesInContainers())


class LogsCalls(nn.Module):
    """Writes into its containers in a way torch.jit.trace (fvcore) can follow."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(8, 8)
        self.log: list[str] = []
        self.last: dict[str, torch.Tensor] = {}

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.log.append("forward")
        out = self.lin(x)
        self.last["out"] = out.detach()
        return out


@pytest.mark.parametrize("collector", ["latency", "sweep", "fvcore", "compile"])
def test_the_gates_measurements_run_a_copy(collector: str) -> None:
    # Seen before: latency, the latency sweep, the fvcore cross-check and compile health
    # ran the user's module itself: its lazy layer got materialised, its caches filled.
    from pytest_modelprof.gate import collect
    from pytest_modelprof.gate.limits import Limits
    from pytest_modelprof.gate.request import ProfileRequest

    lazy = collector != "fvcore"  # fvcore traces with torch.jit, which a lazy layer refuses
    model = _lazy_with_caches() if lazy else LogsCalls()
    before = snapshot(model)
    request = ProfileRequest(model, (4, 8))
    if collector == "latency":
        limits = Limits().with_values({"max_latency": "1e6ms", "timing_rounds": 10}, "test")
        assert collect.measure_latency(request, limits) is not None
    elif collector == "sweep":
        limits = Limits().with_values({"max_latency_growth": 9.0}, "test")
        assert collect.run_sweep(request, {"batch": [2, 4]}, limits) is not None
    elif collector == "fvcore":
        pytest.importorskip("fvcore")
        limits = Limits().with_values({"fvcore": True, "max_fvcore_delta": 0.5}, "test")
        evidence = collect.run_fvcore(request, limits)
        assert evidence is not None and evidence.error is None, evidence
    else:
        limits = Limits().with_values({"max_graph_breaks": 9}, "test")
        assert collect.measure_compile(request, limits, None) is not None
    assert differences(before, snapshot(model)) == []
    if lazy:
        assert isinstance(model, nn.Sequential)
        layer = model[0]
        assert isinstance(layer, nn.LazyLinear)  # materialising turns it into a Linear
        assert layer.has_uninitialized_params()


# -- Python state outside the module: random number generators, module globals, classes -------


class DrawsPythonAndNumpyNumbers(nn.Module):
    """Draws from Python's and NumPy's global generators, as data augmentation code does."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(8, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        scale = 1.0 + random.random() + float(numpy.random.rand())
        return self.lin(x) * scale


@pytest.mark.parametrize("mode", MODES)
def test_profiling_leaves_pythons_and_numpys_random_state_alone(mode: str) -> None:
    random.seed(1)
    numpy.random.seed(1)
    python_state, numpy_state = random.getstate(), numpy.random.get_state()
    profile_model(DrawsPythonAndNumpyNumbers(), input_shape=(2, 8), mode=mode)  # type: ignore[arg-type]
    assert random.getstate() == python_state
    after = numpy.random.get_state()
    assert numpy.array_equal(after[1], numpy_state[1]) and after[2:] == numpy_state[2:]


def test_wav2vec2_training_graph_leaves_numpys_random_state_alone() -> None:
    # In train mode wav2vec2 masks time steps drawn with NumPy's global generator.
    transformers = pytest.importorskip("transformers")
    config = transformers.Wav2Vec2Config(
        hidden_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=64,
        conv_dim=(16, 16),
        conv_stride=(5, 2),
        conv_kernel=(10, 3),
        num_conv_pos_embeddings=16,
        num_conv_pos_embedding_groups=2,
        mask_time_prob=0.5,
        mask_time_length=2,
    )
    model = transformers.Wav2Vec2Model(config)
    numpy.random.seed(1)
    state = numpy.random.get_state()
    profile_model(model, input_shape=(1, 4000), include_backward=True)
    assert numpy.array_equal(numpy.random.get_state()[1], state[1])


_REGISTRY: dict[str, torch.Tensor] = {}


class WritesGlobalState(nn.Module):
    """Its forward keeps its last output in a module-level registry and on its class."""

    last: torch.Tensor | None = None

    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(8, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.lin(x)
        _REGISTRY["last"] = h
        type(self).last = h
        return h


@pytest.mark.parametrize("mode", ["meta", "fake"])
def test_stand_in_tensors_left_in_global_state_are_reported(mode: str) -> None:
    _REGISTRY.clear()
    WritesGlobalState.last = None
    with pytest.warns(GlobalStateWarning) as warned:
        profile_model(WritesGlobalState(), input_shape=(2, 8), mode=mode)  # type: ignore[arg-type]
    message = str(warned[0].message)
    assert "_REGISTRY['last']" in message and "WritesGlobalState.last" in message, message
    assert mode in message
    _REGISTRY.clear()
    WritesGlobalState.last = None


def test_real_tensors_left_in_global_state_are_not_stand_ins() -> None:
    _REGISTRY.clear()
    profile_model(WritesGlobalState(), input_shape=(2, 8), mode="real")  # no warning: an error
    assert not _REGISTRY["last"].is_meta
    _REGISTRY.clear()
    WritesGlobalState.last = None
