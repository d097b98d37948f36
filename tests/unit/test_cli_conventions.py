"""One CLI convention for every ``modelprof`` command, checked on the real parser.

``--json`` is a flag printing the document to stdout, a file is ``--output``/``-o``, hardware is
``--machine NAME`` from the one table of :mod:`pytest_modelprof.machines` with the precision a
separate ``--precision``, an optimizer name means one thing everywhere, a mistyped flag gets
"did you mean" with the command's own usage, and every ``--help`` ends with examples.
"""

from __future__ import annotations

import argparse
import json

import pytest

from pytest_modelprof.cli import COMMANDS, _common, build_parser, main

#: Spellings the convention replaced: a file is --output, hardware is --machine.
FORBIDDEN = ("--out", "--gpu", "--gpu-memory", "--json-out", "--file")


def _subparsers() -> dict[str, argparse.ArgumentParser]:
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(sub.choices)


def _options(p: argparse.ArgumentParser) -> list[argparse.Action]:
    return [a for a in p._actions if a.option_strings and not isinstance(a, argparse._HelpAction)]


def test_every_option_follows_the_convention() -> None:
    OPTIONS = _common.OPTIONS
    broken: list[str] = []
    for name, p in _subparsers().items():
        for action in _options(p):
            flag = max(action.option_strings, key=len)
            where = f"modelprof {name} {flag}"
            if flag in FORBIDDEN:
                broken.append(f"{where}: a spelling the convention replaced")
            if not (action.help or "").strip():
                broken.append(f"{where}: no help")
            shared = OPTIONS.get(flag)
            if shared is not None:
                if tuple(action.option_strings) != shared.flags:
                    broken.append(f"{where}: spelled {action.option_strings}, not {shared.flags}")
                if (action.nargs == 0) != shared.is_flag:
                    broken.append(
                        f"{where}: {'a flag' if shared.is_flag else 'takes a value'} "
                        "in the shared table"
                    )
                if action.type is not shared.kwargs.get("type"):
                    broken.append(f"{where}: its own type, not the shared table's")
    assert broken == []


#: Names that still mean different things in different commands (one size or a list of sizes
#: to sweep; a relative tolerance or a limit; several metrics or one).
UNSHARED = {"--batch", "--seq-len", "--tolerance", "--metric"}


def test_an_option_of_several_commands_comes_from_the_table() -> None:
    commands: dict[str, set[str]] = {}
    for name, p in _subparsers().items():
        for action in _options(p):
            commands.setdefault(max(action.option_strings, key=len), set()).add(name)
    shared = {flag for flag, where in commands.items() if len(where) > 1}
    assert shared - set(_common.OPTIONS) - UNSHARED == set()


def test_json_is_a_flag_and_a_file_is_output() -> None:
    p = _subparsers()
    OPTIONS = _common.OPTIONS
    assert "--json" in OPTIONS and OPTIONS["--json"].is_flag
    for name in ("history", "compare"):
        actions = {a.option_strings[0]: a for a in _options(p[name])}
        assert actions["--json"].nargs == 0, name
        assert actions["--output"].option_strings == ["--output", "-o"], name
    comment = {a.option_strings[0] for a in _options(p["comment"])}
    assert "--output" in comment and "--out" not in comment


def test_every_help_ends_with_runnable_examples() -> None:
    p = _subparsers()
    for command in COMMANDS:
        text = p[command.name].format_help().rstrip()
        lines = command.examples.strip().splitlines()
        assert lines and all(
            line.lstrip().startswith(("modelprof ", "#")) or line.startswith("      ")
            for line in lines
        ), command.name
        assert text.endswith(command.examples.rstrip()), command.name
        assert "\nExamples:\n" in text, command.name


def test_a_mistyped_flag_names_it_suggests_and_shows_the_command_usage(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code = main(["profile", "resnet50", "--mashine", "h100"])
    err = capsys.readouterr().err
    assert code == 2
    assert "--mashine" in err and "did you mean '--machine'?" in err
    assert "usage: modelprof profile" in err


def test_a_mistyped_flag_of_a_command_without_a_near_miss(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code = main(["comment", "results.json", "--zzzz"])
    err = capsys.readouterr().err
    assert code == 2 and "'--zzzz'" in err and "usage: modelprof comment" in err


def test_history_json_is_a_flag() -> None:
    ns = build_parser().parse_args(["history", "baselines", "--json"])
    assert ns.json is True and ns.output is None


GPT2 = ("--arch", "n_layer=1,n_embd=64,n_head=2,vocab_size=100,n_positions=128")


def test_llm_takes_the_machine_by_hardware_name(capsys: pytest.CaptureFixture[str]) -> None:
    from pytest_modelprof.machines import MACHINES

    code = main(
        ["llm", "hf:gpt2", "--machine", "h100", *GPT2, "--prompt", "8", "--context", "64", "--json"]
    )
    out, err = capsys.readouterr()
    assert code == 0, err
    roofline = json.loads(out)["roofline"]
    assert roofline["machine"] == "h100"
    assert roofline["memory_bytes"] == MACHINES["h100"].memory_bytes


def test_memory_takes_the_machine_by_hardware_name(capsys: pytest.CaptureFixture[str]) -> None:
    from pytest_modelprof.machines import MACHINES

    code = main(
        [
            "memory",
            "hf:gpt2",
            "--machine",
            "h100",
            *GPT2,
            "--seq-len",
            "16",
            "--no-largest-batch",
            "--json",
        ]
    )
    out, err = capsys.readouterr()
    assert code == 0, err
    fits = json.loads(out)["memory"]["fits"]
    assert list(fits) == ["h100"]
    assert fits["h100"]["capacity_bytes"] == MACHINES["h100"].memory_bytes


@pytest.mark.parametrize("command", ["profile", "llm", "memory", "partition"])
def test_a_wrong_machine_gets_did_you_mean_and_the_choices(
    command: str, capsys: pytest.CaptureFixture[str]
) -> None:
    from pytest_modelprof.machines import MACHINES

    code = main([command, "hf:gpt2", "--machine", "h100-80gb"])
    err = capsys.readouterr().err
    assert code == 2
    assert "'h100-80gb'" in err and "did you mean 'h100'" in err
    assert all(name in err for name in MACHINES)
    assert f"usage: modelprof {command}" in err


def test_one_machine_table_with_peaks_bandwidth_and_capacity() -> None:
    import pytest_modelprof.machines as machines

    assert not hasattr(machines, "GPUS") and not hasattr(machines, "GPU_MEMORY")
    for name, spec in machines.MACHINES.items():
        assert name == spec.name and "-" + name.rsplit("-", 1)[-1] not in ("-bf16", "-fp16")
        assert spec.memory_bytes > 0 and spec.bandwidth > 0
        peaks = {p: spec.machine(p).peak_flops for p in machines.PRECISIONS}
        assert peaks["fp32"] <= peaks["tf32"] <= peaks["bf16"], name
    h100 = machines.resolve_machine("h100", precision="bf16")
    assert (h100.peak_flops, h100.bandwidth) == (989.5e12, 3350e9)
    assert machines.resolve_machine("a100-80gb", precision="fp32").peak_flops == 19.5e12
    with pytest.raises(ValueError, match="did you mean 'h100'"):
        machines.resolve_machine("h100-bf16")


def test_sgd_means_plain_sgd_in_memory_and_bench() -> None:
    from typing import get_args

    from pytest_modelprof.fit.options import OPTIMIZERS
    from pytest_modelprof.optimizers import build_optimizer
    from pytest_modelprof.runtime.bench_document import OptimizerName

    BENCH_OPTIMIZERS = get_args(OptimizerName)
    assert set(BENCH_OPTIMIZERS) == set(OPTIMIZERS) - {"none"}
    p = _subparsers()
    bench = next(a for a in _options(p["bench"]) if a.option_strings == ["--optimizer"])
    assert tuple(bench.choices or ()) == BENCH_OPTIMIZERS
    import torch

    w = [torch.nn.Parameter(torch.zeros(2))]
    assert build_optimizer("sgd", w).defaults["momentum"] == 0
    assert build_optimizer("sgd-momentum", w).defaults["momentum"] == 0.9
