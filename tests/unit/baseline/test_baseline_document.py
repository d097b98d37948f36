"""The baseline document: deterministic JSON, round trip, migrations, corrupt and newer files."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from pytest_modelprof.baseline.document import (
    BASELINE_SCHEMA_VERSION,
    BaselineDocument,
    migrate,
)
from pytest_modelprof.errors import BaselineError
from pytest_modelprof.schema import LayerStats, ModelProfile

MakeProfile = Callable[..., ModelProfile]
MakeLayer = Callable[..., LayerStats]


def doc(profile: ModelProfile, **kw: Any) -> BaselineDocument:
    return BaselineDocument.from_profile(
        profile, test="tests/t.py::test_x[a]", name=kw.get("name"), settings={"z": "1", "a": "2"}
    )


def test_round_trip_and_determinism(make_profile: MakeProfile) -> None:
    d = doc(make_profile(ai=1 / 3))
    text = d.to_json()
    assert text.endswith("}\n") and not text.endswith("\n\n")
    assert BaselineDocument.from_json(text) == d
    assert BaselineDocument.from_json(text).to_json() == text  # byte-identical on rewrite
    data = json.loads(text)
    assert list(data) == sorted(data)  # sorted keys
    assert data["metrics"]["intensity"] == 0.333333  # fixed rounding (6 decimals)
    assert data["schema_version"] == BASELINE_SCHEMA_VERSION
    assert data["environment"] == {
        "capture_mode": "meta",
        "device": "cpu",
        "dtype": "float32",
        "torch_version": "2.15.0",
        "source_version": None,  # a torchvision name: no extra package
        "torchvision_version": data["environment"]["torchvision_version"],
    }
    assert data["uncounted_ops"] == {}
    assert '  "environment": {' in text  # indent 2


def test_layers_sorted_and_merged(make_profile: MakeProfile, make_layer: MakeLayer) -> None:
    layers = [make_layer("b", 10), make_layer("a", 20), make_layer("b", 5)]
    d = doc(make_profile(layers=layers))
    assert [(r.name, r.flops) for r in d.layers] == [("a", 20), ("b", 15)]


def test_corrupt_json_names_file() -> None:
    with pytest.raises(
        BaselineError, match=r"baselines/x\.json: corrupt baseline.*update-baselines"
    ):
        BaselineDocument.from_json("{not json", source="baselines/x.json")


def test_invalid_fields_name_the_path(make_profile: MakeProfile) -> None:
    data = json.loads(doc(make_profile()).to_json())
    data["metrics"]["flops"] = "lots"
    data["bogus"] = 1
    with pytest.raises(BaselineError) as info:
        BaselineDocument.from_json(json.dumps(data), source="b.json")
    assert "metrics.flops" in str(info.value) and "bogus" in str(info.value)


def test_newer_schema_is_refused(make_profile: MakeProfile) -> None:
    data = json.loads(doc(make_profile()).to_json())
    data["schema_version"] = BASELINE_SCHEMA_VERSION + 1
    with pytest.raises(BaselineError, match="newer than this pytest-modelprof.*Upgrade"):
        BaselineDocument.from_json(json.dumps(data), source="b.json")


@pytest.mark.parametrize("version", [None, "1", True, 0])
def test_bad_or_unsupported_version(version: object) -> None:
    with pytest.raises(BaselineError, match="b.json"):
        migrate({"schema_version": version}, source="b.json")


def test_non_object_is_corrupt() -> None:
    with pytest.raises(BaselineError, match="expected a JSON object"):
        BaselineDocument.from_json("[1, 2]", source="b.json")


def test_migrations_run_step_by_step() -> None:
    # A synthetic history: v1 stored "flops" at the top level, v2 renamed "net" to "model".
    steps = {
        1: lambda d: {
            **{k: v for k, v in d.items() if k != "flops"},
            "metrics": {"flops": d["flops"]},
        },
        2: lambda d: {**{k: v for k, v in d.items() if k != "net"}, "model": d["net"]},
    }
    out = migrate(
        {"schema_version": 1, "flops": 5, "net": "r18"}, source="b", migrations=steps, current=3
    )
    assert out == {"schema_version": 3, "metrics": {"flops": 5}, "model": "r18"}


def test_a_v1_baseline_migrates(make_profile: MakeProfile) -> None:
    # A file as the first release wrote it: no uncounted ops, a shorter environment.
    data = json.loads(doc(make_profile()).to_json())
    del data["uncounted_ops"]
    for key in ("torchvision_version", "source_version"):
        del data["environment"][key]
    data["schema_version"] = 1
    upgraded = BaselineDocument.from_json(json.dumps(data), source="old.json")
    assert upgraded.schema_version == BASELINE_SCHEMA_VERSION == 3
    # Unknown, not empty: a v1 baseline cannot say which ops are "newly" uncounted.
    assert upgraded.uncounted_ops is None
    assert upgraded.metrics == doc(make_profile()).metrics
