"""The session's profile cache on real modules and tensors: inputs given as a dict or a list
are keyed by each tensor's identity, shape and dtype, a module by its parameters' shapes and
dtypes (``model.half()`` is profiled again), and a lazy module before its first call works."""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import nn

from pytest_modelprof.gate.cache import ProfileCache
from pytest_modelprof.gate.request import ProfileRequest
from pytest_modelprof.schema import ModelProfile

MakeProfile = Callable[..., ModelProfile]


def _counting(make_profile: MakeProfile) -> tuple[ProfileCache, list[ProfileRequest], Callable]:
    calls: list[ProfileRequest] = []

    def profile(request: ProfileRequest) -> ModelProfile:
        calls.append(request)
        return make_profile()

    cache = ProfileCache()
    return cache, calls, lambda request: cache.get_or_profile(request, profile)


def test_inputs_in_a_dict_or_a_list_are_keyed_by_each_tensor(make_profile: MakeProfile) -> None:
    cache, calls, get = _counting(make_profile)
    model, x = nn.Linear(4, 2), torch.zeros(1, 4)
    get(ProfileRequest(model, inputs={"input": x}))
    get(ProfileRequest(model, inputs={"input": x}))
    assert len(calls) == 1 and cache.hits == 1
    get(ProfileRequest(model, inputs={"input": torch.zeros(3, 4)}))  # another batch
    get(ProfileRequest(model, inputs=[x]))  # the same tensor, passed positionally
    get(ProfileRequest(model, inputs=[x.double()]))
    assert len(calls) == 4


def test_a_module_cast_to_another_dtype_is_profiled_again(make_profile: MakeProfile) -> None:
    _, calls, get = _counting(make_profile)
    model = nn.Linear(4, 2)
    get(ProfileRequest(model, (1, 4)))
    model.half()
    get(ProfileRequest(model, (1, 4)))
    model.eval()  # a training flag of a submodule changes the profile too
    get(ProfileRequest(model, (1, 4)))
    assert len(calls) == 3


def test_a_lazy_module_before_its_first_call_is_keyed(make_profile: MakeProfile) -> None:
    _, calls, get = _counting(make_profile)
    model = nn.LazyLinear(2)  # its weight has no shape yet
    get(ProfileRequest(model, (1, 4)))
    get(ProfileRequest(model, (1, 4)))
    assert len(calls) == 1
