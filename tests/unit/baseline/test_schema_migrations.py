"""Baselines, results files and profiles of every earlier schema version load under today's
quantity names and give the verdicts they gave before the renames.

The files under ``tests/data/schemas`` were written by the code of each version (see the README
there): the baseline of a tiny model at width 8, the results and the profile at width 12.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pytest_modelprof.baseline.compare import compare
from pytest_modelprof.baseline.document import (
    BASELINE_SCHEMA_VERSION,
    BaselineDocument,
    migrate,
)
from pytest_modelprof.gate.limits import Limits
from pytest_modelprof.results.document import RESULTS_SCHEMA_VERSION, RunResults, load_document
from pytest_modelprof.schema import PROFILE_SCHEMA_VERSION, ModelProfile

DATA = Path(__file__).parents[2] / "data" / "schemas"

#: Names no document may carry after it is read.
OLD_NAMES = frozenset(
    {
        "memory",
        "peak_memory",
        "arithmetic_intensity",
        "latency_ms",
        "compile_s",
        "kv_cache_bytes",
        "predicted_ms",
        "decode_flops_growth_exponent",
    }
)
#: Keys no document may carry: the old names less ``arithmetic_intensity``, which stays the
#: name of a profile's and a layer's field (the spelled-out quantity, not a metric key).
OLD_KEYS = OLD_NAMES - {"arithmetic_intensity"}
#: The old metric names of the metrics these files hold, to read their stored verdicts.
RENAMED = {
    "memory": "traffic",
    "peak_memory": "peak_activations",
    "arithmetic_intensity": "intensity",
}

#: The limits the two tests that wrote the files set, under today's names.
LIMITS: dict[str, dict[str, object]] = {
    "test_gen.py::test_tiny": {
        "max_traffic_delta": 0.05,
        "max_intensity_delta": 0.5,
        "max_peak_activations_delta": "ignore",
    },
    "test_gen.py::test_tiny_loose": {
        key: "200%"
        for key in (
            "max_flops_delta",
            "max_macs_delta",
            "max_params_delta",
            "max_traffic_delta",
            "max_peak_activations_delta",
        )
    },
}
_ALL = (
    "flops",
    "macs",
    "params",
    "traffic",
    "peak_activations",
    "intensity",
    "subgraphs",
    "stages",
)
#: What the code before the renames judged (``results-v4.json``, which it wrote).
BEFORE = {
    "test_gen.py::test_tiny": {
        **dict.fromkeys(_ALL, "ok"),
        **dict.fromkeys(("flops", "macs", "params", "traffic"), "regressed"),
    },
    "test_gen.py::test_tiny_loose": dict.fromkeys(_ALL, "ok"),
}
#: The width-8 baseline's numbers: the same in every version.
BASELINE_METRICS = {
    "flops": 21898,
    "macs": 10656,
    "params": 3114,
    "traffic": 17872,
    "peak_activations": 2304,
    "intensity": 1.225269,
    "subgraphs": 2,
    "stages": 2,
}


def _names(data: Any) -> set[str]:
    """Every key of a JSON tree, and every check's metric name."""
    if isinstance(data, dict):
        found = set(data) | {data["metric"]} if isinstance(data.get("metric"), str) else set(data)
        return found.union(*(_names(v) for v in data.values()))
    if isinstance(data, list):
        return set().union(*(_names(v) for v in data))
    return set()


def _verdicts(current: BaselineDocument, baseline: BaselineDocument, test: str) -> dict[str, str]:
    limits = Limits().with_values(LIMITS[test], f"marker on {test}")
    # Judged as the old code judged it: in the environment the baseline was written in (this
    # process's torch may differ, which would turn kernel-dependent failures into warnings).
    current = current.model_copy(update={"environment": baseline.environment})
    return {c.metric: c.verdict for c in compare(current, baseline, limits.policy()).checks}


def _profile() -> ModelProfile:
    return ModelProfile.from_json((DATA / "profile-v1.json").read_text(encoding="utf-8"))


@pytest.mark.parametrize("version", [1, 2])
def test_baseline_of_each_version_reads_under_todays_names(version: int) -> None:
    path = DATA / f"baseline-v{version}.json"
    doc = BaselineDocument.from_json(path.read_text(encoding="utf-8"), source=str(path))
    assert doc.schema_version == BASELINE_SCHEMA_VERSION
    assert doc.metrics == BASELINE_METRICS
    assert doc.settings["max_traffic_delta"] == "+5.0 %"
    assert doc.settings["max_intensity_delta"] == "-50.0 %"
    assert {layer.name: layer.traffic for layer in doc.layers}["0"] > 0
    assert not _names(json.loads(doc.to_json())) & OLD_KEYS
    assert not {k for k in doc.settings if "memory" in k and "_memory" not in k}


@pytest.mark.parametrize("version", [1, 2])
def test_baseline_of_each_version_gives_the_verdicts_of_before(version: int) -> None:
    path = DATA / f"baseline-v{version}.json"
    old = BaselineDocument.from_json(path.read_text(encoding="utf-8"), source=str(path))
    rewritten = BaselineDocument.from_json(old.to_json())  # the same numbers, today's version
    for test in LIMITS:
        current = BaselineDocument.from_profile(_profile(), test=test, name=None, settings={})
        assert _verdicts(current, old, test) == BEFORE[test]
        assert _verdicts(current, rewritten, test) == BEFORE[test]


def test_profile_of_version_1_reads_under_todays_names() -> None:
    raw = json.loads((DATA / "profile-v1.json").read_text(encoding="utf-8"))
    profile = _profile()
    assert profile.schema_version == PROFILE_SCHEMA_VERSION
    assert profile.total_traffic == raw["total_memory"] == 26384
    assert [layer.traffic for layer in profile.layers] == [r["memory"] for r in raw["layers"]]
    assert not _names(json.loads(profile.to_json())) & OLD_KEYS


@pytest.mark.parametrize("version", [1, 2, 3, 4])
def test_results_of_each_version_keep_their_verdicts_under_todays_names(version: int) -> None:
    path = DATA / f"results-v{version}.json"
    raw = json.loads(path.read_text(encoding="utf-8"))
    results = load_document(path)
    assert isinstance(results, RunResults)
    assert results.schema_version == RESULTS_SCHEMA_VERSION
    assert not _names(json.loads(results.to_json())) & OLD_KEYS
    for test in results.tests:
        keyed = {*test.metrics, *test.baseline_metrics, *(c.metric for c in test.checks)}
        assert test.baseline is not None and not (keyed | set(test.baseline.metrics)) & OLD_NAMES
    stored = {
        t["nodeid"]: (
            t["status"],
            {RENAMED.get(c["metric"], c["metric"]): c["verdict"] for c in t["checks"]},
        )
        for t in raw["tests"]
    }
    assert {
        t.nodeid: (t.status, {c.metric: c.verdict for c in t.checks}) for t in results.tests
    } == stored
    labels = {c.metric: c.label for t in results.tests for c in t.checks}
    assert labels["traffic"] == "traffic" and labels["intensity"] == "intensity"
    for test in results.tests:  # the values of each test: recorded from version 3 on
        assert version < 3 or test.metrics["traffic"] == 26384
        assert version < 3 or test.baseline_metrics["traffic"] == 17872


@pytest.mark.parametrize("version", [1, 2, 3, 4])
def test_results_of_each_version_judge_again_as_before(version: int) -> None:
    results = load_document(DATA / f"results-v{version}.json")
    assert isinstance(results, RunResults)
    for test in results.tests:
        assert test.profile is not None and test.baseline is not None
        current = BaselineDocument.from_profile(
            test.profile, test=test.nodeid, name=None, settings={}
        )
        assert _verdicts(current, test.baseline, test.nodeid) == BEFORE[test.nodeid]


def test_a_v2_baseline_keeps_its_timing_verdicts_and_llm_growth_under_todays_names() -> None:
    v2 = {
        "schema_version": 2,
        "test": "t.py::test_llm",
        "settings": {"timing_strict": "true", "max_memory_delta": "0.1"},
        "measured": {"llm": {"growth": {"kv_cache_bytes": 1.0, "flops": 2.0}}},
        "compile": {"compile_s": 1.5},
    }
    doc = migrate(v2, source="v2.json")
    assert doc["settings"] == {"timing_verdicts": "fail", "max_traffic_delta": "0.1"}
    assert doc["measured"]["llm"]["growth"] == {"kv_cache": 1.0, "flops": 2.0}
    assert doc["compile"] == {"compile_time": 1.5}
    lenient = migrate({**v2, "settings": {"timing_strict": "false"}}, source="v2.json")
    assert lenient["settings"] == {"timing_verdicts": "warn"}
