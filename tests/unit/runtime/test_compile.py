"""Compile health on real models: graphs, breaks with user locations, recompiles, Inductor.

Counts here are Dynamo's behaviour on small models written so the answer is known by reading
them (one break per ``float(tensor)``), not op names of one torch version.
"""

from __future__ import annotations

import argparse
import inspect
import json
import logging
import re
import time
import warnings
from pathlib import Path

import pytest
import torch
from torch import nn

from pytest_modelprof import _compat
from pytest_modelprof.cli import main
from pytest_modelprof.cli.compile import parse_batch_sizes
from pytest_modelprof.compile import (
    BreakReason,
    CompileHealth,
    analyze_compile,
    format_compile_health,
    new_breaks,
    user_location,
)


def _line_of(fn: object, text: str) -> int:
    """The file line of the first source line of ``fn`` containing ``text``."""
    lines, start = inspect.getsourcelines(fn)  # type: ignore[arg-type]
    return start + next(i for i, line in enumerate(lines) if text in line)


def _is_here(location: str, fn: object, text: str) -> bool:
    """``location`` names this file (by a relative path) at the line of ``text`` in ``fn``."""
    path, _, line = location.rpartition(":")
    return (
        path.endswith(Path(__file__).name)
        and not Path(path).is_absolute()
        and int(line) == _line_of(fn, text)
    )


class Clean(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc1 = nn.Linear(8, 16)
        self.fc2 = nn.Linear(16, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out: torch.Tensor = self.fc2(torch.relu(self.fc1(x)))
        return out


class Branchy(nn.Module):
    """One break: Python branches on a tensor's value."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(8, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.fc(x)
        if float(x.mean()) > 0:  # the break
            x = x + 1
        return torch.relu(x)


def scale_if_positive(x: torch.Tensor) -> torch.Tensor:
    if x.sum().item() > 0:  # helper break
        return x * 2
    return x


class HelperBreak(nn.Module):
    """The break happens one call deeper, in a plain function of the user's."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(8, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return scale_if_positive(self.fc(x))


class BreakFirst(nn.Module):
    """A break before any op: no graph precedes it, yet it is a break Dynamo made."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        torch._dynamo.graph_break()  # first-line break
        return torch.relu(x) + 1


class WithBatchNorm(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.bn = nn.BatchNorm1d(8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out: torch.Tensor = self.bn(x)
        return out


# -- counts ------------------------------------------------------------------------------------


def test_a_clean_model_is_one_graph_without_breaks() -> None:
    health = analyze_compile(Clean(), torch.randn(2, 8))
    assert (health.graphs, health.graph_breaks, health.break_reasons) == (1, 0, [])
    # linear, relu, linear
    assert health.ops_per_graph == [3]
    assert health.recompiles == 0
    assert health.kernels is None and health.compile_time is None


def test_resnet18_by_name_is_one_graph() -> None:
    health = analyze_compile("resnet18", input_shape=(1, 3, 32, 32))
    assert health.graphs == 1 and health.graph_breaks == 0
    assert health.ops_per_graph[0] > 50  # 20 convs, 20 batch norms, relus, adds, pool, fc
    assert health.input_shapes == [[[1, 3, 32, 32]]]


def test_a_branch_on_a_tensor_value_is_one_break_at_the_users_line() -> None:
    health = analyze_compile(Branchy(), torch.randn(2, 8))
    assert health.graphs == 2
    assert health.graph_breaks == 1
    [br] = health.break_reasons
    assert _is_here(br.location, Branchy.forward, "# the break")
    assert br.reason and "\n" not in br.reason


def test_a_break_in_a_helper_names_the_helpers_line() -> None:
    health = analyze_compile(HelperBreak(), torch.randn(2, 8))
    assert health.graph_breaks >= 1
    # Dynamo breaks the caller at the call, then the helper's own frame at the same line.
    for br in health.break_reasons:
        assert _is_here(br.location, scale_if_positive, "# helper break")
    assert health.graph_breaks == len(health.break_reasons)


def test_a_break_before_any_op_still_counts() -> None:
    # torch._dynamo.explain derives breaks as graphs - 1 and reports 0 here.
    health = analyze_compile(BreakFirst(), torch.randn(4))
    assert health.graph_breaks == 1
    assert _is_here(health.break_reasons[0].location, BreakFirst.forward, "# first-line break")


def test_recompiles_over_batch_sizes_static_and_dynamic() -> None:
    static = analyze_compile(Clean(), torch.randn(2, 8), shapes=[3, 4])
    # dynamic=False specialises on every shape: one more compile per new batch size.
    assert static.recompiles == 2
    assert static.input_shapes == [[[2, 8]], [[3, 8]], [[4, 8]]]
    dynamic = analyze_compile(Clean(), torch.randn(2, 8), shapes=[3, 4], dynamic=True)
    assert dynamic.recompiles == 0
    assert dynamic.dynamic is True
    same = analyze_compile(Clean(), torch.randn(2, 8), shapes=[2])
    assert same.recompiles == 0


def test_recompiles_count_every_frame_of_a_broken_model() -> None:
    # Two frames (forward and the code after the break), each compiled again for batch 3.
    health = analyze_compile(Branchy(), torch.randn(2, 8), shapes=[3])
    assert health.recompiles == 2
    # Breaks are those of the first inputs, not repeated per recompile.
    assert health.graph_breaks == 1


def test_explicit_inputs_as_shapes() -> None:
    health = analyze_compile(Clean(), torch.randn(2, 8), shapes=[torch.randn(5, 8)])
    assert health.input_shapes[1] == [[5, 8]]
    assert health.recompiles == 1


# -- isolation ---------------------------------------------------------------------------------


def test_no_compiled_state_is_left_behind_and_the_model_is_unchanged() -> None:
    model = WithBatchNorm().train()
    before = {k: v.clone() for k, v in model.state_dict().items()}
    level = logging.getLogger("torch._dynamo").level
    trace = logging.getLogger("torch.__trace").level
    analyze_compile(model, torch.randn(4, 8), shapes=[6])
    assert _compat.dynamo_cache_entries(WithBatchNorm.forward.__code__) == 0
    assert model.training  # put back after running in eval mode
    after = model.state_dict()
    assert all(torch.equal(before[k], after[k]) for k in before)  # running stats untouched
    assert logging.getLogger("torch._dynamo").level == level
    assert logging.getLogger("torch.__trace").level == trace
    assert torch.is_grad_enabled()


def test_compiled_functions_of_the_process_keep_their_compiled_code() -> None:
    # Seen before: analyze_compile called torch.compiler.reset() before and after, which
    # dropped every compiled function of the test process: each recompiled on its next call.
    compiles: list[int] = []

    def counting(gm: torch.fx.GraphModule, example_inputs: object) -> object:
        compiles.append(1)
        return gm.forward

    def users(x: torch.Tensor) -> torch.Tensor:
        y = torch.sin(x)
        torch._dynamo.graph_break()  # one break record of the caller's own
        return y + 1

    compiled = torch.compile(users, backend=counting)
    x = torch.randn(4)
    try:
        compiled(x)
        assert len(compiles) == 2  # the two halves around the break
        caller_breaks = _compat.dynamo_break_events()
        health = analyze_compile(Branchy(), torch.randn(2, 8))
        assert health.graphs == 2 and health.graph_breaks == 1  # the caller's break not counted
        compiled(x)
        assert len(compiles) == 2  # no recompilation: its compiled code was still there
        assert _compat.dynamo_cache_entries(users.__code__) == 1
        assert _compat.dynamo_break_events() == caller_breaks  # its records are back
        assert _compat.dynamo_cache_entries(Branchy.forward.__code__) == 0  # ours dropped
    finally:
        torch.compiler.reset()


def test_dynamo_state_of_the_caller_does_not_decide_the_counts() -> None:
    # Compiled state made before the analysis must not decide its counts.
    model = Branchy()
    with torch.no_grad():
        torch.compile(model, backend="eager")(torch.randn(2, 8))
    try:
        health = analyze_compile(model, torch.randn(2, 8))
        assert health.graphs == 2 and health.recompiles == 0
    finally:
        torch.compiler.reset()


@pytest.mark.slow
def test_inductor_figures_are_opt_in_and_configs_are_restored() -> None:
    import torch.compiler

    flag = torch.compiler.config.force_disable_caches
    health = analyze_compile(Clean(), torch.randn(2, 8), inductor=True)
    assert health.kernels is not None and health.kernels >= 1
    assert health.compile_time is not None and health.compile_time > 0
    assert torch.compiler.config.force_disable_caches == flag
    assert _compat.inductor_kernel_count() == 0  # counters zeroed for whoever comes next


# -- errors ------------------------------------------------------------------------------------


@pytest.mark.parametrize("bad", [0, -2, True])
def test_a_bad_batch_size_is_named(bad: int) -> None:
    with pytest.raises(ValueError, match=r"shapes\[0\]"):
        analyze_compile(Clean(), torch.randn(2, 8), shapes=[bad])


def test_a_model_that_cannot_run_the_inputs_is_named_with_the_shapes() -> None:
    from pytest_modelprof.errors import ModelprofError

    with pytest.raises(ModelprofError, match=r"Clean: .*\[\[2, 5\]\].*input_shape"):
        analyze_compile(Clean(), torch.randn(2, 5))  # fc1 wants 8 features


def test_a_non_model_is_refused() -> None:
    with pytest.raises(TypeError, match="nn.Module or a model name"):
        analyze_compile(42, torch.randn(2))  # type: ignore[arg-type]


# -- pure parts --------------------------------------------------------------------------------


def test_user_location_skips_torch_and_this_package() -> None:
    import pytest_modelprof

    torch_file = str(Path(torch.__file__).parent / "nn" / "functional.py")
    own_file = str(Path(pytest_modelprof.__file__).parent / "profile.py")
    here = str(Path(__file__).resolve())
    stack = [(here, 10), (torch_file, 200), (own_file, 5), ("<eval_with_key>.3", 1)]
    assert user_location(stack) == f"{Path(__file__).relative_to(Path.cwd()).as_posix()}:10"
    # Nothing outside: the innermost frame is better than nothing.
    assert user_location([(torch_file, 200)]).endswith("functional.py:200")
    assert user_location([]) == "<unknown>"


def test_new_breaks_is_a_multiset_difference() -> None:
    a = BreakReason(reason="r", location="m.py:1")
    b = BreakReason(reason="r", location="m.py:9")
    assert new_breaks([a, a, b], [a]) == [a, b]
    assert new_breaks([a], [a, b]) == []


def test_json_is_deterministic_and_round_trips() -> None:
    model, x = Branchy(), torch.randn(2, 8)  # the branch taken depends on weights and data
    health = analyze_compile(model, x, shapes=[3])
    text = health.to_json()
    assert text.endswith("\n") and text == CompileHealth.from_json(text).to_json()
    data = json.loads(text)
    assert list(data) == sorted(data)
    assert data["break_reasons"][0].keys() == {"reason", "location"}
    assert analyze_compile(model, x, shapes=[3]).to_json() == text


def test_text_lists_every_break() -> None:
    health = analyze_compile(Branchy(), torch.randn(2, 8))
    text = format_compile_health(health, "Branchy")
    assert "graph breaks  1" in text
    assert health.break_reasons[0].location in text


# -- the command -------------------------------------------------------------------------------


def test_parse_batch_sizes() -> None:
    assert parse_batch_sizes("1,2, 4") == [1, 2, 4]
    for bad in ("0,1", "a", ""):
        with pytest.raises(argparse.ArgumentTypeError):
            parse_batch_sizes(bad)


def test_help_ends_with_examples(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["compile", "--help"]) == 0
    text = capsys.readouterr().out
    assert "Examples:" in text
    assert text.rstrip().splitlines()[-1].strip().startswith("modelprof compile")


def test_compile_resnet18_json_reports_one_graph_no_breaks(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["compile", "resnet18", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["graphs"] == 1 and data["graph_breaks"] == 0 and data["break_reasons"] == []
    assert data["recompiles"] == 0
    assert "kernels" not in data and "compile_time" not in data


def test_compile_batches_count_recompiles(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["compile", "resnet18", "--json", "--input-shape", "1,3,32,32", "--batch", "2,3"]
    assert main(argv) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["input_shapes"] == [[[2, 3, 32, 32]], [[3, 3, 32, 32]]]
    assert data["recompiles"] == 1  # dynamic=False: batch 3 is a new specialisation
    assert main([*argv, "--dynamic"]) == 0
    assert json.loads(capsys.readouterr().out)["recompiles"] == 0


@pytest.mark.slow
def test_compile_text_names_the_breaks_of_a_yolo_yaml(capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("ultralytics")
    assert main(["compile", "yolov8n.yaml", "--input-shape", "1,3,64,64"]) == 0
    text = capsys.readouterr().out
    assert "graphs" in text and "recompiles" in text
    # Every break is reported at a file:line inside ultralytics, the model's own code.
    breaks = [line for line in text.splitlines() if re.match(r"    \S+\.py:\d+", line)]
    assert breaks and all(line.split()[0].startswith("ultralytics/") for line in breaks)


def test_compile_unknown_model_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["compile", "resnet_18"]) == 2
    assert "resnet18" in capsys.readouterr().err  # the suggestion


# -- smoke tests of the private torch APIs behind _compat ----------------------------------------


def test_compat_dynamo_break_events_smoke() -> None:
    def f(x: torch.Tensor) -> torch.Tensor:
        torch._dynamo.graph_break()
        return x + 1

    torch.compiler.reset()
    try:
        torch.compile(f, backend="eager")(torch.ones(2))
        [(reason, stack)] = _compat.dynamo_break_events()
        assert isinstance(reason, str) and stack[-1][0] == __file__
    finally:
        torch.compiler.reset()
    assert _compat.dynamo_break_events() == []


def test_compat_dynamo_frames_compiled_smoke() -> None:
    def g(x: torch.Tensor) -> torch.Tensor:
        return x * 3

    before = _compat.dynamo_frames_compiled()
    try:
        torch.compile(g, backend="eager")(torch.ones(2))
        assert _compat.dynamo_frames_compiled() == before + 1
        assert _compat.dynamo_cache_entries(g.__code__) == 1
    finally:
        torch.compiler.reset()
    assert _compat.dynamo_cache_entries(g.__code__) == 0


def test_compat_dynamo_scoped_smoke() -> None:
    def earlier(x: torch.Tensor) -> torch.Tensor:
        torch._dynamo.graph_break()
        return x - 1

    def inside(x: torch.Tensor) -> torch.Tensor:
        torch._dynamo.graph_break()
        return x + 1

    torch.compiler.reset()
    try:
        torch.compile(earlier, backend="eager")(torch.ones(2))
        breaks = _compat.dynamo_break_events()
        assert len(breaks) == 1
        with _compat.dynamo_scoped():
            assert _compat.dynamo_break_events() == []  # records of its own
            torch.compile(inside, backend="eager")(torch.ones(2))
            assert len(_compat.dynamo_break_events()) == 1
            assert _compat.dynamo_cache_entries(inside.__code__) == 1
        assert _compat.dynamo_cache_entries(inside.__code__) == 0  # dropped on exit
        assert _compat.dynamo_cache_entries(earlier.__code__) == 1  # kept
        assert _compat.dynamo_break_events() == breaks
    finally:
        torch.compiler.reset()


def test_compat_dynamo_explain_smoke() -> None:
    with torch.no_grad():  # with grad, Dynamo warns about reading .grad of non-leaf tensors
        out = _compat.dynamo_explain(Branchy())(torch.randn(2, 8))
    assert out.graph_count == 2 and out.graph_break_count == 1


def test_compat_inductor_metrics_and_cache_switch_smoke() -> None:
    import torch.compiler

    _compat.reset_inductor_metrics()
    assert _compat.inductor_kernel_count() == 0
    flag = torch.compiler.config.force_disable_caches
    with _compat.inductor_caches_disabled():
        assert torch.compiler.config.force_disable_caches is True
    assert torch.compiler.config.force_disable_caches == flag


def test_the_gate_compiles_as_the_test_asks() -> None:
    # compile_dynamic in the marker (or --modelprof-compile-dynamic, ini twin) reaches
    # torch.compile: forced static recompiles per batch size, forced dynamic never, and the
    # default is torch's own automatic dynamic shapes.
    from pytest_modelprof.gate.collect import measure_compile
    from pytest_modelprof.gate.limits import Limits
    from pytest_modelprof.gate.request import ProfileRequest

    request = ProfileRequest(Clean(), (2, 8))
    sweep = {"batch": [2, 3, 4]}

    def recompiles(value: object) -> int:
        limits = Limits().with_values({"max_recompiles": 9, "compile_dynamic": value}, "test")
        health = measure_compile(request, limits, sweep)
        assert health is not None
        return health.recompiles

    assert Limits().with_values({"compile_dynamic": "false"}, "t").compile_dynamic is False
    assert Limits().with_values({"compile_dynamic": "auto"}, "t").compile_dynamic is None
    assert recompiles(False) == 2
    assert recompiles(True) == 0
    assert recompiles("auto") == 1  # one recompile, then the batch dimension is dynamic


class Worded(nn.Module):
    """Three breaks a user writes: a branch on a tensor, a skipped call, a print."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(8, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.fc(x)
        if x.sum() > 0:
            x = x * 2
        time.sleep(0)
        print("", end="")
        return x + 1


def test_break_reasons_are_in_the_users_words_and_dynamo_warns_nothing() -> None:
    # Seen before: "generic_jump TensorVariable()", "Attempted to call function marked as skipped",
    # and a multi-line UserWarning of Dynamo's in pytest's warnings summary.
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        health = analyze_compile(Worded(), torch.randn(2, 8))
    reasons = [br.reason for br in health.break_reasons]
    assert len(reasons) == 3, reasons
    assert "data-dependent `if` on a tensor" in reasons[0]
    assert "`time.sleep`, which Dynamo skips" in reasons[1]
    assert "`print`" in reasons[2]
    assert not any("TensorVariable" in r or "marked as skipped" in r for r in reasons)
    assert [str(w.message) for w in caught if "Dynamo" in str(w.message)] == []
