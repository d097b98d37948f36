"""The gate sees a broken fusion through the subgraph count, with FLOPs and memory unchanged."""

from __future__ import annotations

from fusion_examples import ConvBnRelu, Tapped

from pytest_modelprof.baseline.compare import Policy, compare
from pytest_modelprof.baseline.document import BaselineDocument
from pytest_modelprof.profile import profile_model
from pytest_modelprof.schema import ModelProfile


def document(profile: ModelProfile) -> BaselineDocument:
    return BaselineDocument.from_profile(profile, test="t.py::test_block", name=None, settings={})


def test_broken_fusion_regresses_subgraphs_only() -> None:
    fused = profile_model(ConvBnRelu(), input_shape=(1, 8, 16, 16))
    broken = profile_model(Tapped(), input_shape=(1, 8, 16, 16))
    result = compare(document(broken), document(fused), Policy())
    verdicts = {c.metric: c.verdict for c in result.checks}
    assert verdicts["subgraphs"] == "regressed"  # 1 -> 2
    assert verdicts["flops"] == verdicts["traffic"] == verdicts["params"] == "ok"
    assert compare(document(fused), document(fused), Policy()).regressions == ()
