"""Run the documentation's Python examples in one process; write one result per example.

``python run_python_examples.py WORKDIR EXAMPLES.json RESULTS.json``: EXAMPLES.json is a list of
``{"source", "code"}``; RESULTS.json maps each source to ``{"ok", "error"}``. Started by
``test_doc_examples.py`` as one subprocess, so torch is imported once for every example and no
example's imports or registrations leak into the suite's own process.

A block that defines ``test_`` functions is a test file: pytest runs it twice in a project of its
own, recording baselines and then gating against them, and both runs must pass. A block that
defines a ``pytest_modelprof_*`` hook is a ``conftest.py``: pytest runs a profiled test beside
it. Any other block is executed after :data:`PRELUDE`.
"""

from __future__ import annotations

import contextlib
import io
import json
import sys
import traceback
from pathlib import Path

#: The placeholders the documentation's examples use, defined small.
PRELUDE = '''
import torch
from torch import nn


class MyModel(nn.Module):
    """A small CNN: what the documentation calls ``MyModel()``."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.head = nn.Linear(8, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(torch.relu(self.conv(x)).mean((2, 3)))


MyNet = MyModel


class TinyLM(nn.Module):
    """A small language model: the documentation's ``lm``, eating ``input_ids``."""

    def __init__(self) -> None:
        super().__init__()
        self.embed = nn.Embedding(100, 16)
        self.out = nn.Linear(16, 100)

    def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
        return self.out(self.embed(input_ids))


lm = TinyLM()
ids = torch.randint(0, 100, (1, 32))
'''

#: The test that runs beside a ``conftest.py`` example.
HOOK_TEST = """
import pytest
from torch import nn


@pytest.mark.profile()
def test_with_the_hooks(modelprof):
    modelprof(nn.Sequential(nn.Linear(8, 4), nn.ReLU()), input_shape=(1, 8))
"""


def _positionals(args: tuple[str, ...]) -> list[str]:
    """The paths among pytest's ``args``: not an option, nor an option's value (a limit's
    ``NAME=VALUE``, the word after ``-k``, ``-m``, ``-p``, ``-o``, ``-c``). Read without
    importing the package, which pytest must import first to rewrite its asserts."""
    valued = {"-k", "-m", "-p", "-o", "-c"}
    return [
        a for i, a in enumerate(args)
        if not a.startswith("-") and "=" not in a and not (i and args[i - 1] in valued)
    ]


def _pytest(project: Path, *args: str) -> str | None:
    """Run pytest with ``project`` as its rootdir (and its only path unless ``args`` name
    some); None when it passed, else its output's tail."""
    import pytest

    paths = [] if _positionals(args) else [str(project)]
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        code = pytest.main(
            [
                *paths,
                "-q",
                "-p",
                "no:cacheprovider",
                "-p",
                "no:randomly",
                f"--rootdir={project}",
                *args,
            ]
        )
    return None if code == 0 else f"pytest exit {int(code)}:\n{out.getvalue()[-3000:]}"


def _example_pytest(project: Path) -> str | None:
    """Record the example project's baselines, then gate against them: both must pass."""
    mode = "--import-mode=importlib"  # every example has a conftest.py or test file of its own
    return _pytest(project, mode, "--modelprof-update-baselines") or _pytest(project, mode)


def _project(workdir: Path, name: str, files: dict[str, str]) -> Path:
    project = workdir / name
    project.mkdir(parents=True)
    (project / "pytest.ini").write_text("[pytest]\n")
    for file, text in files.items():
        (project / file).write_text(text)
    return project


def run_one(workdir: Path, index: int, code: str) -> str | None:
    """None when the example ran, else why it did not."""
    if "def test_" in code:
        project = _project(workdir, f"example{index}", {f"test_example{index}.py": PRELUDE + code})
        return _example_pytest(project)
    if "def pytest_modelprof_" in code:
        project = _project(
            workdir,
            f"example{index}",
            {"conftest.py": PRELUDE + code, f"test_hooks{index}.py": HOOK_TEST},
        )
        return _example_pytest(project)
    namespace: dict[str, object] = {"__name__": f"example{index}"}
    out = io.StringIO()
    try:
        with contextlib.redirect_stdout(out):
            exec(compile(PRELUDE, "<prelude>", "exec"), namespace)  # noqa: S102
            exec(compile(code, f"<example {index}>", "exec"), namespace)  # noqa: S102
    except Exception:
        return traceback.format_exc(limit=-3)
    return None


def gate_sandbox(sandbox: Path) -> None:
    """The sandbox's baselines and results files: a real gate run over its tests."""
    tests = sandbox / "tests" / "test_zoo.py"
    runs = [
        (
            "--modelprof-update-baselines",
            f"--modelprof-json={sandbox / 'results.json'}",
            str(tests),
        ),
        (f"--modelprof-json={sandbox / 'shard-1.json'}", f"{tests}::test_resnet50"),
        (f"--modelprof-json={sandbox / 'shard-2.json'}", f"{tests}::test_vit"),
    ]
    for args in runs:
        error = _pytest(sandbox, *args)
        if error:
            raise SystemExit(f"the sandbox's gate run {args} failed: {error}")


def main(argv: list[str]) -> int:
    workdir, examples_file, results_file = (Path(a) for a in argv[:3])
    options = dict(zip(argv[3::2], argv[4::2], strict=True))
    if "--sandbox" in options:
        gate_sandbox(Path(options["--sandbox"]))
    examples = json.loads(examples_file.read_text())
    results: dict[str, dict[str, object]] = {}
    if "--projects" in options:  # pytest commands of a block, in order, in a user's project
        spec = json.loads(Path(options["--projects"]).read_text())
        for index, (source, runs) in enumerate(spec["runs"].items()):
            project = _project(workdir, f"project{index}", {"test_zoo.py": spec["tests"]})
            error = None
            for args in runs:
                error = error or _pytest(project, "--import-mode=importlib", *args)
            results["project:" + source] = {"ok": error is None, "error": error}
    if "--collect" in options:  # this suite's own commands: collected, the suite runs them
        root = Path(__file__).resolve().parents[2]
        for args in json.loads(Path(options["--collect"]).read_text()):
            error = _pytest(
                root,
                "--collect-only",
                *[str(root / a) if a.startswith("tests/") else a for a in args],
            )
            results["collect:" + " ".join(args)] = {"ok": error is None, "error": error}
    for index, example in enumerate(examples):
        error = run_one(workdir, index, example["code"])
        results[example["source"]] = {"ok": error is None, "error": error}
    results_file.write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
