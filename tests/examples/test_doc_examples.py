"""Every example of README.md, docs/ and the ``--help`` epilogs runs (see ``doc_examples``).

One item per command and per Python block, so a failure names the example. The sandbox the
commands run in is built once per run (under xdist, by the first worker; the others wait).
"""

from __future__ import annotations

import glob
import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from doc_examples import (
    ROOT,
    SIZE_OVERRIDES,
    Command,
    Example,
    all_examples,
    apply_overrides,
    commands,
    logical_lines,
    needs,
)
from filelock import FileLock

from pytest_modelprof.cli import main

HERE = Path(__file__).resolve().parent
EXAMPLES = all_examples()
PYTHON = [replace(e, code=apply_overrides(e.code)) for e in EXAMPLES if e.lang == "python"]
BASH = [e for e in EXAMPLES if e.lang == "bash"]
COMMANDS = [c for e in BASH for c in commands(e, SIZE_OVERRIDES)]

#: The terminal width every command runs at: its text output must fit it.
COLUMNS = 80
#: Commands whose stdout is a Markdown document (a pull request's comment), not terminal text.
MARKDOWN_OUT = ("comment",)
#: Commands that are checked, not run, and why.
NOT_RUN = {
    # Installs and downloads: .ci/run installs the quickstart verbatim in a fresh virtual
    # environment; tests/integration/test_install_wheel.py builds a wheel and installs it offline.
    "pip": ("install", "wheel", "download"),
}
#: Commands whose arguments are parsed by the real parser but that are not run, and why.
PARSE_ONLY = {
    "bisect": "each step is a pytest session in a git worktree (seconds of CPU each); "
    "tests/unit/history/test_bisect.py runs bisect end to end",
}


def _quickstart_test(readme: Path = ROOT / "README.md") -> tuple[str, ...]:
    """The test command .ci/run takes from the README: the block under its marker."""
    text = readme.read_text(encoding="utf-8").split("<!-- quickstart:test -->", 1)[1]
    block = text.split("```bash\n", 1)[1].split("```", 1)[0]
    return tuple(block.split("&&")[-1].split())


QUICKSTART_TEST = _quickstart_test()

SANDBOX_TESTS = """
import pytest


@pytest.mark.profile(model="resnet50")
def test_resnet50():
    pass


@pytest.mark.profile(model="vit_b_16")
def test_vit():
    pass


@pytest.mark.profile(model="resnet18")
def test_resnet18():
    pass
"""

MY_NETS = '''
from torch import nn


def make_net(depth: int = 2) -> nn.Module:
    """A small CNN for the examples that import ``my_pkg.nets:make_net``."""
    layers: list[nn.Module] = [nn.Conv2d(3, 8, 3, padding=1), nn.ReLU()]
    for _ in range(depth - 1):
        layers += [nn.Conv2d(8, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU()]
    return nn.Sequential(*layers, nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(8, 10))
'''

#: ``hf:./my-model``: a folder with a config.json, as users download one.
MY_MODEL_CONFIG = {
    "model_type": "llama",
    "hidden_size": 64,
    "intermediate_size": 128,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "vocab_size": 1000,
    "max_position_embeddings": 8192,
}


def _names_tests(command: Command) -> bool:
    """A ``python -m pytest`` command that names part of this suite (not the whole of it)."""
    return command.words[:3] == ("python", "-m", "pytest") and any(
        w.startswith("tests/") for w in command.words[3:]
    )


def _in_a_project(command: Command) -> bool:
    """A ``python -m pytest`` command run in a user's project (not this suite's)."""
    return (
        command.words[:3] == ("python", "-m", "pytest")
        and not _names_tests(command)
        and command.words != QUICKSTART_TEST
    )


def _git(root: Path, *args: str) -> None:
    env = dict(
        os.environ,
        GIT_CONFIG_GLOBAL=os.devnull,
        GIT_CONFIG_NOSYSTEM="1",
        GIT_AUTHOR_NAME="docs",
        GIT_AUTHOR_EMAIL="docs@example.invalid",
        GIT_COMMITTER_NAME="docs",
        GIT_COMMITTER_EMAIL="docs@example.invalid",
    )
    subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True, env=env)


def _scaled(baseline: Path, factor: float) -> None:
    """A later version of a baseline: its FLOPs and MACs scaled (a commit of the history)."""
    data = json.loads(baseline.read_text())
    for key in ("flops", "macs"):
        data["metrics"][key] = int(data["metrics"][key] * factor)
    baseline.write_text(json.dumps(data, sort_keys=True, indent=2) + "\n")


def _build(sandbox: Path) -> dict[str, Any]:
    """The sandbox the commands run in, and the Python examples' results."""
    sandbox.mkdir(parents=True)
    (sandbox / "pytest.ini").write_text("[pytest]\n")
    (sandbox / "tests").mkdir()
    (sandbox / "tests" / "test_zoo.py").write_text(SANDBOX_TESTS)
    (sandbox / "my_pkg").mkdir()
    (sandbox / "my_pkg" / "__init__.py").write_text("")
    (sandbox / "my_pkg" / "nets.py").write_text(MY_NETS)
    (sandbox / "my-model").mkdir()
    (sandbox / "my-model" / "config.json").write_text(json.dumps(MY_MODEL_CONFIG))
    todo = sandbox.parent / "python-examples.json"
    todo.write_text(json.dumps([{"source": e.source, "code": e.code} for e in PYTHON]))
    collect = [list(c.words[3:]) for c in COMMANDS if _names_tests(c)]
    (sandbox.parent / "collect.json").write_text(json.dumps(collect))
    projects = {
        e.source: [list(c.words[3:]) for c in commands(e, SIZE_OVERRIDES) if _in_a_project(c)]
        for e in BASH
    }
    (sandbox.parent / "projects.json").write_text(
        json.dumps({"tests": SANDBOX_TESTS, "runs": {k: v for k, v in projects.items() if v}})
    )
    results = sandbox.parent / "python-results.json"
    work = sandbox.parent / "python-work"
    work.mkdir()
    env = dict(
        os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])
    )
    done = subprocess.run(
        [
            sys.executable,
            str(HERE / "run_python_examples.py"),
            str(work),
            str(todo),
            str(results),
            "--sandbox",
            str(sandbox),
            "--collect",
            str(sandbox.parent / "collect.json"),
            "--projects",
            str(sandbox.parent / "projects.json"),
        ],
        capture_output=True,
        text=True,
        env=env,
        cwd=sandbox,
        timeout=900,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    # A git history of the baselines: v1.0, then the FLOPs grew (v1.2), then HEAD.
    resnet = sandbox / "baselines" / "tests" / "test_zoo" / "test_resnet50.json"
    # Two profiles to compare: a model under the 5 GFLOPs budget an example sets.
    for name in ("old.json", "new.json"):
        shutil.copy(resnet.with_name("test_resnet18.json"), sandbox / name)
    _git(sandbox, "init", "-q", "-b", "main")
    (sandbox / ".gitignore").write_text("__pycache__/\n")
    _git(sandbox, "add", "-A")
    _git(sandbox, "commit", "-q", "-m", "first baselines")
    _git(sandbox, "tag", "v1.0")
    _scaled(resnet, 1.5)
    _git(sandbox, "commit", "-q", "-am", "a wider resnet")
    _git(sandbox, "tag", "v1.2")
    _git(sandbox, "tag", "abc1234")
    _scaled(resnet, 1 / 1.5)
    _git(sandbox, "commit", "-q", "-am", "back to the first width")
    (sandbox / "modelprof-report").mkdir()
    shutil.copy(sandbox / "results.json", sandbox / "modelprof-report" / "results.json")
    for name in ("main-results.json", "pr-results.json"):
        shutil.copy(sandbox / "results.json", sandbox / name)
    return json.loads(results.read_text())


@pytest.fixture(scope="session")
def examples_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    """(the sandbox, the Python examples' results), built once for all xdist workers."""
    base = tmp_path_factory.getbasetemp()
    # xdist workers have a basetemp each under the run's: build in the run's, once.
    shared = (base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / "doc-examples"
    shared.mkdir(exist_ok=True)
    with FileLock(str(shared / "lock")):
        done = shared / "results.json"
        if not done.exists():
            done.write_text(json.dumps(_build(shared / "sandbox")))
    return shared / "sandbox", json.loads(done.read_text())


def _present(probe: str) -> bool:
    if probe == "valgrind":
        return shutil.which("valgrind") is not None
    if probe == "cuda":
        import torch

        return torch.cuda.is_available()
    if probe == "compiler":
        return any(shutil.which(cc) for cc in ("c++", "g++", "clang++"))
    raise AssertionError(probe)


def _absent(text: str, config: pytest.Config) -> list[str]:
    """Why ``text`` cannot run here: what it needs and this machine (or ``-m``) lacks."""
    asked = config.getoption("markexpr") or ""
    return [
        need.reason
        for need in needs(text)
        if not _present(need.probe) or (need.marker is not None and need.marker not in asked)
    ]


def _params(examples: list[Example]) -> list[Any]:
    """One param per example, carrying the markers of what it needs (``-m valgrind`` ...)."""
    return [
        pytest.param(
            e,
            id=e.source,
            marks=[getattr(pytest.mark, n.marker) for n in needs(e.code) if n.marker],
        )
        for e in examples
    ]


@pytest.mark.parametrize("example", PYTHON, ids=[e.source for e in PYTHON])
def test_python_example(example: Example, examples_run: tuple[Path, dict[str, Any]]) -> None:
    _, results = examples_run
    result = results[example.source]
    assert result["ok"], f"{example.source} failed:\n{example.code}\n\n{result['error']}"


@pytest.mark.parametrize("example", _params(BASH))
def test_command_example(
    example: Example,
    request: pytest.FixtureRequest,
    examples_run: tuple[Path, dict[str, Any]],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The commands of one block, in order, as a user pastes them."""
    sandbox, results = examples_run
    skipped: list[str] = []
    for command in commands(example, SIZE_OVERRIDES):
        absent = _absent(" ".join(command.words), request.config)
        if absent:
            skipped.append(f"{' '.join(command.words[:2])}: {absent[0]}")
            continue
        run_command(command, sandbox, results, capsys, monkeypatch)
    if skipped:  # the block's other commands ran and passed
        pytest.skip("; ".join(skipped))


def run_command(
    command: Command,
    sandbox: Path,
    results: dict[str, Any],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Run one command; fail naming it when it fails."""
    program = command.words[0]
    assert program in ("modelprof", "pip", "python"), (
        f"{command.id}: a command the examples test cannot run; teach doc_examples.py"
    )
    if program == "pip":
        assert command.words[1] in NOT_RUN["pip"], command.id
        return
    if program == "python":
        assert command.words[:3] == ("python", "-m", "pytest"), command.id
        if command.words == QUICKSTART_TEST:
            return  # .ci/run runs it verbatim: it is this suite
        if _names_tests(command):
            collected = results["collect:" + " ".join(command.words[3:])]
            assert collected["ok"], f"{command.id}:\n{collected['error']}"
            return
        # pytest in a user's project: the block's pytest commands ran in order, in a project
        # of the sandbox's tests, in the examples' subprocess (an in-process run would drop
        # the modules it imported first, and a library holding one of them then breaks).
        ran = results["project:" + command.example.source]
        assert ran["ok"], f"{command.id}:\n{ran['error']}"
        return
    monkeypatch.chdir(sandbox)
    monkeypatch.syspath_prepend(str(sandbox))
    monkeypatch.setenv("COLUMNS", str(COLUMNS))
    words: list[str] = []
    for word in command.words[1:]:  # the shell's globbing: shard-*.json
        words += (sorted(glob.glob(word)) or [word]) if "*" in word else [word]
    if words[0] in PARSE_ONLY:
        from pytest_modelprof.cli import build_parser

        build_parser().parse_args(words)
        return
    code = main(words)
    out, err = capsys.readouterr()
    assert code == 0, f"{command.id}: exit {code}\n{err[-3000:]}"
    document = "--json" in words or words[0] in MARKDOWN_OUT
    if not command.stdout_to and not command.pipe_to and not document:
        # What a person reads fits the terminal (a JSON or Markdown document is for programs).
        wide = [line for line in out.splitlines() if len(line) > COLUMNS]
        assert wide == [], f"{command.id}: {len(wide)} lines wider than {COLUMNS}: {wide[:3]}"
    if command.stdout_to:
        (sandbox / command.stdout_to).write_text(out)
    if command.pipe_to:
        assert command.pipe_to[0] == "jq", command.id
        json.loads(out)
        if shutil.which("jq"):
            done = subprocess.run(
                ["jq", *command.pipe_to[1:]], input=out, capture_output=True, text=True, check=False
            )
            assert done.returncode == 0, f"{command.id}: {done.stderr}"


def test_every_override_is_used() -> None:
    """A size override that matches no example is stale: the example it was for changed."""
    texts = [e.code for e in EXAMPLES if e.lang == "python"]
    texts += [line for e in BASH for line in logical_lines(e.code)]
    for override in SIZE_OVERRIDES:
        assert any(re.search(override.pattern, text) for text in texts), (
            f"size override {override.pattern!r} matches no example ({override.reason})"
        )
