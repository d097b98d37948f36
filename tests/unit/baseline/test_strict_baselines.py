"""Baseline figures are read as the file has them, and a missing one never passes a limit."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from pytest_modelprof._json import MAX_DEPTH, JSONProblem, load_json
from pytest_modelprof.baseline.compare import Policy, compare
from pytest_modelprof.baseline.document import BaselineDocument
from pytest_modelprof.baseline.metrics import BUILTIN_METRICS
from pytest_modelprof.baseline.tolerance import Exact
from pytest_modelprof.errors import BaselineError
from pytest_modelprof.schema import ModelProfile

MakeProfile = Callable[..., ModelProfile]
SOURCE = "baselines/tests/t/test_x.json"


def _data(make_profile: MakeProfile) -> dict[str, Any]:
    doc = BaselineDocument.from_profile(
        make_profile(), test="tests/t.py::test_x", name=None, settings={}
    )
    data: dict[str, Any] = json.loads(doc.to_json())
    return data


def _refusal(data: dict[str, Any] | str) -> str:
    text = data if isinstance(data, str) else json.dumps(data)
    with pytest.raises(BaselineError) as info:
        BaselineDocument.from_json(text, source=SOURCE)
    message = str(info.value)
    assert "\n" not in message and message.startswith(f"{SOURCE}: "), message
    return message


@pytest.mark.parametrize(
    "value, said",
    [
        (1e308, "got 1e+308"),
        (True, "got true"),
        ("2640", 'got "2640"'),
        (-1, "got -1"),
        (2640.0, "got 2640.0"),
        (None, "got null"),
    ],
)
def test_a_count_is_a_non_negative_integer_as_written(
    make_profile: MakeProfile, value: object, said: str
) -> None:
    data = _data(make_profile)
    data["metrics"]["flops"] = value
    message = _refusal(data)
    assert f"metrics.flops: expected a count (a non-negative integer), {said}" in message


def test_other_figures_are_finite_numbers_as_written(make_profile: MakeProfile) -> None:
    data = _data(make_profile)
    data["metrics"]["intensity"] = "1.5"
    data["metrics"]["from_a_plugin"] = False
    message = _refusal(data)
    assert 'metrics.intensity: expected a number, got "1.5"' in message
    assert "metrics.from_a_plugin: expected a number, got false" in message
    data = _data(make_profile)
    data["metrics"]["from_a_plugin"] = -0.5  # a metric we do not know: any finite number
    assert BaselineDocument.from_json(json.dumps(data)).metrics["from_a_plugin"] == -0.5


@pytest.mark.parametrize("constant", ["NaN", "Infinity", "-Infinity"])
def test_non_finite_numbers_name_their_field(make_profile: MakeProfile, constant: str) -> None:
    data = _data(make_profile)
    data["timing"] = {"rounds": [[1.0, "@"]]}  # free JSON: checked all the same
    message = _refusal(json.dumps(data).replace('"@"', constant))
    assert f"(timing.rounds[0][1]: {constant} is not a finite number)" in message


def test_integers_beyond_a_count_and_deep_nesting_name_their_field(
    make_profile: MakeProfile,
) -> None:
    data = _data(make_profile)
    text = json.dumps(data)
    flops = f'"flops": {data["metrics"]["flops"]}'
    assert "(metrics.flops: an integer beyond any count" in _refusal(
        text.replace(flops, '"flops": 1' + "0" * 5000)
    )
    layers = json.loads(text)
    layers["layers"][0]["flops"] = -1
    assert "(layers[0].flops: Input should be greater than or equal to 0" in _refusal(layers)
    for levels in (MAX_DEPTH + 1, 100_000):
        deep = text.replace(flops, '"flops": ' + "[" * levels + "]" * levels)
        assert "(metrics.flops[0]\u2026: nested deeper than 64 levels)" in _refusal(deep)


def test_a_baseline_lacking_what_its_version_always_records_is_incomplete(
    make_profile: MakeProfile,
) -> None:
    data = _data(make_profile)
    del data["metrics"]["macs"], data["metrics"]["params"]
    message = _refusal(data)
    assert "incomplete baseline (metrics lack macs, params, which every schema_version 3" in message
    assert "`pytest --modelprof-update-baselines`" in message
    data["schema_version"] = 1
    data.pop("uncounted_ops")
    assert "schema_version 1 baseline records" in _refusal(data)
    # Prune still knows the file as a baseline: it belongs to its test, complete or not.
    doc = BaselineDocument.from_json(json.dumps(data), source=SOURCE, complete=False)
    assert "macs" not in doc.metrics


def test_a_valid_baseline_reads_back_unchanged(make_profile: MakeProfile) -> None:
    data = _data(make_profile)
    doc = BaselineDocument.from_json(json.dumps(data), source=SOURCE)
    assert json.loads(doc.to_json()) == data


def test_load_json_leaves_ordinary_json_alone() -> None:
    assert load_json('{"a": [1, 2.5, -3, null, true, "x"]}') == {"a": [1, 2.5, -3, None, True, "x"]}
    assert load_json('{"a": NaN}', finite=False)["a"] != 0  # NaN, kept where asked
    with pytest.raises(JSONProblem, match=r"^a: NaN is not a finite number$"):
        load_json('{"a": NaN}')


def _docs(make_profile: MakeProfile) -> tuple[BaselineDocument, BaselineDocument]:
    current = BaselineDocument.from_profile(make_profile(), test="t", name=None, settings={})
    metrics = dict(current.metrics)
    metrics.pop("subgraphs", None)
    before = current.model_copy(update={"metrics": {**metrics, "stages": 1}})
    current = current.model_copy(update={"metrics": {**current.metrics, "subgraphs": 3}})
    return current, before


def test_a_figure_the_baseline_lacks_is_new_and_says_so(make_profile: MakeProfile) -> None:
    current, before = _docs(make_profile)
    row = next(c for c in compare(current, before, Policy()).checks if c.metric == "subgraphs")
    assert row.verdict == "new" and not row.failed
    assert row.reason == (
        "3, not in the baseline (recorded before this metric was measured here): "
        "`pytest --modelprof-update-baselines` records it"
    )
    fresh = compare(current, None, Policy()).checks
    assert all(c.reason.endswith("(no baseline yet)") for c in fresh)


def test_a_written_limit_never_passes_against_a_missing_figure(
    make_profile: MakeProfile,
) -> None:
    current, before = _docs(make_profile)
    metric = BUILTIN_METRICS.by_name("subgraphs")
    assert metric is not None
    policy = Policy(tolerances={"subgraphs": Exact()}, explicit=frozenset({"subgraphs"}))
    row = next(c for c in compare(current, before, policy).checks if c.metric == "subgraphs")
    assert row.verdict == "unmeasured" and row.failed
    assert row.reason.startswith(
        "a limit is set (max_subgraphs_delta=exact) but the baseline holds no subgraphs figure"
    )
    # The built-in default (not written by the user) keeps the row new.
    default = Policy(explicit=frozenset({"subgraphs"}))
    row = next(c for c in compare(current, before, default).checks if c.metric == "subgraphs")
    assert row.verdict == "new"


@pytest.mark.parametrize("value", ["NaN", "Infinity", '"2640"', "true", "[" * 300 + "]" * 300])
def test_history_reads_each_version_as_strictly(make_profile: MakeProfile, value: str) -> None:
    from pytest_modelprof.history.versions import read_version

    data = _data(make_profile)
    text = json.dumps(data).replace(f'"flops": {data["metrics"]["flops"]}', f'"flops": {value}')
    with pytest.raises(BaselineError) as info:
        read_version(text.encode(), source=SOURCE)
    message = str(info.value)
    assert "\n" not in message and message.startswith(f"{SOURCE}: corrupt baseline (metrics.flops")
    assert read_version(json.dumps(data).encode(), source=SOURCE).metrics == data["metrics"]
