"""The ``modelprof`` fixture's refusals: a bad ``name=``, two names one file would hold where
case is ignored, and a model's own error as one short failure that registers nothing."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from pytest_modelprof.errors import ModelInputError, SettingsError
from pytest_modelprof.gate.fixture import Modelprof, TestProfiles
from pytest_modelprof.gate.request import ProfileRequest
from pytest_modelprof.schema import ModelProfile

MakeProfile = Callable[..., ModelProfile]


def _defaults() -> tuple[object, str | None, dict[str, object]]:
    return (1, 3, 8, 8), None, {}


@pytest.mark.parametrize("name", ["", 3])
def test_a_name_must_be_a_non_empty_string(make_profile: MakeProfile, name: object) -> None:
    fixture = Modelprof(TestProfiles(), lambda r: make_profile(), _defaults)
    with pytest.raises(SettingsError, match=rf"name={name!r} must be a non-empty string"):
        fixture("resnet18", name=name)  # type: ignore[arg-type]


def test_names_one_file_would_hold_where_case_is_ignored_are_refused(
    make_profile: MakeProfile,
) -> None:
    profiles = TestProfiles()
    fixture = Modelprof(profiles, lambda r: make_profile(), _defaults)
    fixture("resnet18", name="head")
    with pytest.raises(SettingsError, match="name='Head' and name='head' differ only by case"):
        fixture("resnet18", name="Head")
    fixture("resnet18")  # no name is no clash with a named one
    assert [n for n, _, _ in profiles.entries] == ["head", None]


def test_a_models_error_fails_the_test_in_one_line_and_registers_nothing() -> None:
    def profile(request: ProfileRequest) -> ModelProfile:
        raise ModelInputError("forward() got an unexpected input")

    failures: list[str] = []
    profiles = TestProfiles()
    fixture = Modelprof(profiles, profile, _defaults, fail=failures.append)
    # The plugin's ``fail`` raises; one that returns still stops the test with the error.
    with pytest.raises(ModelInputError):
        fixture("resnet18")
    assert failures == ["modelprof: forward() got an unexpected input"]
    assert profiles.entries == []
    without_fail = Modelprof(profiles, profile, _defaults)
    with pytest.raises(ModelInputError, match="unexpected input"):
        without_fail("resnet18")
