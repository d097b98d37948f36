"""Hand-built profiles and results for the report tests: no torch, numbers easy to check."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import replace
from datetime import datetime, timezone

from pytest_modelprof.baseline.document import BaselineDocument
from pytest_modelprof.gate.documents import compare_profiles
from pytest_modelprof.gate.limits import Limits
from pytest_modelprof.machines import GENERIC
from pytest_modelprof.results.document import RunInfo, RunResults
from pytest_modelprof.results.record import ProfileResult, SourceLocation
from pytest_modelprof.schema import (
    CaptureInfo,
    Environment,
    LayerStats,
    ModelProfile,
    OpFamilyStats,
    TensorSpec,
)

EVIL = "<script>alert(1)</script>"
NASTY_MODULE = "blocks.0.&\"'<>"


def layer(name: str, flops: int, memory: int, *, type: str = "Conv2d") -> LayerStats:
    ai = flops / memory if memory else 0.0
    return LayerStats(
        name=name, type=type, calls=1, flops=flops, macs=flops // 2, params=flops // 100,
        bytes_read=memory // 2, bytes_written=memory - memory // 2, traffic=memory,
        arithmetic_intensity=ai, bottleneck="compute-bound" if ai >= 10 else "memory-bound",
    )


def profile(model: str, layers: list[LayerStats]) -> ModelProfile:
    flops = sum(x.flops for x in layers)
    memory = sum(x.traffic for x in layers)
    return ModelProfile(
        model=model,
        inputs=[TensorSpec(shape=[1, 3, 8, 8], dtype="float32")],
        capture=CaptureInfo(mode="meta", requested="auto", reason="test"),
        environment=Environment(torch_version="9.9", python_version="3", platform="any",
                                device="cpu", dtype="float32"),
        machine=GENERIC,
        total_flops=flops, total_macs=flops // 2, total_params=sum(x.params for x in layers),
        param_bytes=0, buffer_bytes=0, activation_bytes=memory, total_traffic=memory,
        peak_activation_bytes=1000, arithmetic_intensity=flops / memory,
        num_ops=len(layers),
        op_breakdown=[
            OpFamilyStats(family="conv", count=2, flops=flops * 3 // 4, macs=0,
                          traffic=memory // 2, share=0.75),
            OpFamilyStats(family="elementwise", count=5, flops=flops // 4, macs=0,
                          traffic=memory // 2, share=0.25),
        ],
        layers=layers,
    )


# before: 1 MFLOPs in two layers; after: the head grows by 300 KFLOPs and a layer is added.
BEFORE = profile("net", [layer("body", 800_000, 80_000), layer("head", 200_000, 100_000)])
AFTER = profile("net", [layer("body", 800_000, 80_000), layer("head", 500_000, 100_000),
                        layer(NASTY_MODULE, 100_000, 50_000, type="Linear")])

MakeResults = Callable[[], RunResults]


def make_results() -> RunResults:
    limits = Limits().with_values({"max_flops_delta": "10%"}, "test")
    regressed = compare_profiles(
        BEFORE, AFTER, limits, nodeid=f"tests/test_x.py::test_x[{EVIL}]",
        location=SourceLocation(path="tests/test_x.py", line=12),
    )
    ok = compare_profiles(BEFORE, BEFORE, limits, nodeid="tests/test_x.py::test_same")
    new = compare_profiles(None, BEFORE, limits, nodeid="tests/test_x.py::test_new",
                           name="backbone")
    run = RunInfo(
        started=datetime(2025, 1, 2, 3, 4, 5, tzinfo=timezone.utc),
        finished=datetime(2025, 1, 2, 3, 4, 15, tzinfo=timezone.utc),
        commit="0123456789abcdef0123456789abcdef01234567",
        repository_url="https://github.com/o/r",
        run_url="https://github.com/o/r/actions/runs/7",
        artifact_url="https://github.com/o/r/actions/runs/7#artifacts",
        torch_version="9.9", device="cpu",
    )
    return RunResults(run=run, tests=[_pinned(t) for t in (ok, new, regressed)])


def _pinned(record: ProfileResult) -> ProfileResult:
    """A baseline records the torchvision of the process that wrote it: the samples pin it, so
    their renders are the same bytes under every installed torchvision."""
    if record.baseline is None:
        return record
    env = record.baseline.environment.model_copy(update={"torchvision_version": "0.0"})
    return record.model_copy(
        update={"baseline": record.baseline.model_copy(update={"environment": env})}
    )


def baseline_of(p: ModelProfile) -> BaselineDocument:
    return BaselineDocument.from_profile(p, test="t", name=None, settings={})


#: What a fork's gate could put in any text of its results file.
HOSTILE = (
    "![x](http://evil.example/t.png) <img src=x onerror=alert(1)> @org/team **APPROVED** "
    "[click](https://evil.example) `tick` a|b www.evil.example $x$ ~~gone~~ &amp; # head"
)


def hostile_results() -> RunResults:
    """The sample results with every text a reader sees replaced by :data:`HOSTILE`."""
    results = make_results()
    tests = []
    for t in results.tests:
        checks = [replace(c, label=HOSTILE, reason=HOSTILE, limit=HOSTILE, delta_text=HOSTILE)
                  for c in t.checks]
        tests.append(t.model_copy(update={
            "checks": checks, "nodeid": HOSTILE, "model": HOSTILE,
            "failures": [HOSTILE], "warnings": [HOSTILE]}))
    run = results.run.model_copy(update={"ref": HOSTILE})
    return results.model_copy(update={"tests": tests, "run": run})


def outside_code_spans(text: str) -> str:
    """``text`` without its code spans (CommonMark: N backticks up to the next run of N)."""
    out, i = [], 0
    for m in re.finditer(r"`+", text):
        if m.start() < i:
            continue
        close = re.search(rf"(?<!`){m.group()}(?!`)", text[m.end():])
        if close is None:
            continue
        out.append(text[i:m.start()])
        i = m.end() + close.end()
    return "".join(out) + text[i:]


def no_live_markdown(text: str) -> None:
    """Nothing of HOSTILE is live Markdown: no image, link, HTML, mention or emphasis."""
    assert "![x](" not in text and "[click](" not in text
    assert not re.search(r"(?<!\\)<img", text)
    assert "http://" not in text and "https://evil" not in text
    assert "@org/team" not in text and "**APPROVED**" not in text
    assert "www.evil" not in text and "~~gone~~" not in text and "$x$" not in text
