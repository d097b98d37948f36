"""What a marker or a fixture call asks to profile: capture options checked, the request built.

Every bad value is a SettingsError that names where it came from and what to write instead.
"""

from __future__ import annotations

import pytest
import torch

from pytest_modelprof.errors import SettingsError
from pytest_modelprof.gate.limits import Limits
from pytest_modelprof.gate.marker import resolve_marker
from pytest_modelprof.gate.request import ProfileRequest, parse_capture_options

SOURCE = "marker on t.py::test_x"


def test_capture_options_keep_what_was_given() -> None:
    options = parse_capture_options(
        {
            "dtype": torch.bfloat16,
            "mode": "meta",
            "include_backward": True,
            "fail_on_uncounted": False,
            "optimizer": "adam",
            "precision": "bf16-mixed",
        },
        SOURCE,
    )
    # torch.bfloat16 is written back as its name: a request is hashable and prints plainly.
    assert options == {
        "dtype": "bfloat16",
        "mode": "meta",
        "include_backward": True,
        "fail_on_uncounted": False,
        "step": (("optimizer", "adam"), ("precision", "bf16-mixed")),
    }
    assert parse_capture_options({}, SOURCE) == {}


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"dtype": "brain float"}, r"dtype='brain float' is not a dtype; write e\.g\. 'bfloat16'"),
        ({"mode": "mta"}, r"mode='mta' is not a capture mode; .*did you mean 'meta'"),
        ({"include_backward": "yes"}, r"include_backward='yes' must be True or False"),
        ({"fail_on_uncounted": 1}, r"fail_on_uncounted=1 must be True or False"),
        ({"optimizer": "lbfgs"}, r"unknown optimizer 'lbfgs'"),
    ],
)
def test_a_bad_capture_option_names_the_marker(values: dict[str, object], message: str) -> None:
    with pytest.raises(SettingsError, match=rf"^{SOURCE}: .*{message}"):
        parse_capture_options(values, SOURCE)


def test_the_engine_gets_only_what_the_request_sets() -> None:
    assert ProfileRequest("resnet18").engine_kwargs() == {}
    request = ProfileRequest(
        "resnet18",
        input_shape=(1, 3, 32, 32),
        device="cpu",
        dtype="float16",
        mode="fake",
        include_backward=True,
        fail_on_uncounted=True,
    )
    assert request.engine_kwargs() == {
        "input_shape": (1, 3, 32, 32),
        "device": "cpu",
        "dtype": "float16",
        "mode": "fake",
        "include_backward": True,
        "fail_on_uncounted": True,
    }


def test_a_marker_builds_its_request() -> None:
    spec = resolve_marker(
        ("resnet18",),
        {
            "input_shape": [1, 3, 32, 32],
            "device": torch.device("cpu"),
            "name": "small",
            "llm": {"prompt": 16, "context": 32},
            "optimizer": "sgd",
        },
        Limits(),
        where="t.py::test_x",
    )
    assert spec.request is not None
    # torch.device("cpu") is kept as its text: the request is hashed for the profile cache.
    assert (spec.request.model, spec.request.device, spec.request.name) == (
        "resnet18",
        "cpu",
        "small",
    )
    assert spec.request.input_shape == (1, 3, 32, 32)
    assert spec.request.llm == (("context", 32), ("prompt", 16))
    assert spec.request.step == (("optimizer", "sgd"),)
    assert spec.capture["llm"] == spec.request.llm  # a fixture call inherits it


@pytest.mark.parametrize(
    ("args", "kwargs", "message"),
    [
        (("a", "b"), {}, r"profile\(\) takes at most one positional argument \(the model\), got 2"),
        (("a",), {"model": "b"}, r"model given both positionally and as model="),
        ((), {"name": ""}, r"name='' must be a non-empty string"),
        ((), {"name": 3}, r"name=3 must be a non-empty string"),
        ((), {"llm": [512]}, r"llm=\[512\] is not a dict"),
    ],
)
def test_a_bad_marker_names_the_test(
    args: tuple[object, ...], kwargs: dict[str, object], message: str
) -> None:
    with pytest.raises(SettingsError, match=rf"^{SOURCE}: {message}"):
        resolve_marker(args, kwargs, Limits(), where="t.py::test_x")
