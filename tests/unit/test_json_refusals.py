"""JSON a user may have edited is parsed without surprises: NaN, integers beyond any count and
deep nesting are refused naming the field path, whether the parser or the walk finds them."""

from __future__ import annotations

import json

import pytest

from pytest_modelprof._json import MAX_DEPTH, MAX_INT, JSONProblem, field_path, load_json


def test_a_non_finite_number_is_named_by_its_path() -> None:
    with pytest.raises(JSONProblem) as caught:
        load_json('{"layers": [{"flops": 1}, {"flops": NaN}]}')
    assert str(caught.value) == "layers[1].flops: NaN is not a finite number"
    assert caught.value.path == "layers[1].flops"
    # Where any float will do (a report shows it), infinities pass.
    assert load_json('{"x": Infinity}', finite=False) == {"x": float("inf")}


@pytest.mark.parametrize("digits", [str(MAX_INT + 1), "9" * 5000, "-" + "9" * 30])
def test_an_integer_beyond_any_count_is_refused(digits: str) -> None:
    with pytest.raises(JSONProblem, match=r"^metrics\.flops: an integer beyond any count"):
        load_json(f'{{"metrics": {{"flops": {digits}}}}}')
    assert load_json(str(MAX_INT)) == MAX_INT


def test_nesting_past_the_limit_names_where_it_starts_repeating() -> None:
    deep = '{"a": ' + "[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1) + "}"
    with pytest.raises(JSONProblem) as caught:
        load_json(deep)
    assert caught.value.why == f"nested deeper than {MAX_DEPTH} levels"
    assert caught.value.path == "a[0]\u2026"  # a run of one index is said once


def test_nesting_too_deep_for_the_parser_is_named_too() -> None:
    text = '{"metrics": {"flops": ' + "[" * 100_000 + "]" * 100_000 + "}}"
    with pytest.raises(JSONProblem) as caught:
        load_json(text)
    assert caught.value.path == "metrics.flops[0]\u2026"
    with pytest.raises(json.JSONDecodeError):
        load_json("{not json")


def test_field_paths_read_like_attribute_access() -> None:
    assert field_path(("layers", 3, "flops")) == "layers[3].flops"
    assert field_path([0, "x"]) == "[0].x"
