"""The marker's ``llm=``: checked at collection, carried on the request (and fixture calls)."""

from __future__ import annotations

import pytest

from pytest_modelprof.errors import SettingsError
from pytest_modelprof.gate.limits import Limits
from pytest_modelprof.gate.marker import resolve_marker


def test_llm_rides_on_the_request_as_sorted_pairs() -> None:
    spec = resolve_marker(
        (), {"model": "hf:llama", "llm": {"context": 4096, "prompt": 512}}, Limits(), where="t"
    )
    assert spec.request is not None
    assert spec.request.llm == (("context", 4096), ("prompt", 512))
    assert spec.capture["llm"] == spec.request.llm  # what a modelprof() call inherits
    hash(spec.request)  # a request stays hashable


@pytest.mark.parametrize(
    ("value", "says"),
    [
        ([512, 4096], "llm=[512, 4096] is not a dict"),
        ({"ctx": 4096}, "llm= has no key 'ctx'; it takes prompt, context, batch, allow_longer"),
        ({"context": 1}, "llm['context']=1 must be an integer >= 2"),
        ({"batch": 2.5}, "llm['batch']=2.5 must be an integer >= 1"),
        ({"allow_longer": "yes"}, "llm['allow_longer']='yes' must be True or False"),
    ],
)
def test_a_bad_llm_argument_names_what_is_wrong(value: object, says: str) -> None:
    with pytest.raises(SettingsError) as info:
        resolve_marker((), {"model": "hf:llama", "llm": value}, Limits(), where="test_x")
    assert str(info.value).startswith("marker on test_x: ")
    assert says in str(info.value)


def test_a_context_list_is_a_sweep() -> None:
    spec = resolve_marker(
        (), {"model": "hf:llama", "llm": {"context": [4096, 1024]}}, Limits(), where="t"
    )
    assert spec.request is not None and spec.request.llm == (("context", (1024, 4096)),)
    with pytest.raises(SettingsError, match=r"llm\['context'\]=\[1024\] is not a context sweep"):
        resolve_marker((), {"model": "m", "llm": {"context": [1024]}}, Limits(), where="t")
