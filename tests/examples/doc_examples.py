"""Every example a user can copy: fenced blocks of README.md and docs/, and ``--help`` epilogs.

The collector reads fenced code blocks (``bash``, ``console``, ``sh`` and ``python``; other
languages, such as YAML workflows and TOML, are configuration that other tests check) and
the ``Examples:`` epilog of every ``modelprof`` command. A command example is split into its
commands (``\\`` continuations joined, ``#`` comments dropped, ``&&`` chains split); a Python
example is one block.

How they run (``test_doc_examples.py``):

- ``modelprof ...`` runs in-process through :func:`pytest_modelprof.cli.main` in a sandbox folder
  that holds what the examples name (``my_pkg.nets:make_net``, ``results.json``, a git
  repository of baselines with the tags they use, ...); ``> FILE`` takes stdout, ``| jq ...``
  gets it as JSON.
- Python blocks run in one subprocess (:mod:`run_python_examples`): a block that defines
  ``test_`` functions is a test file run by pytest (update, then gate); one that defines a
  ``pytest_modelprof_*`` hook is a ``conftest.py`` whose hooks are called; any other block is
  executed after a prelude that defines the placeholders the documentation uses (``MyModel``,
  ``MyNet``, ``lm``, ``ids``).
- ``python -m pytest ...`` that names part of this suite (``tests/...``) is collected
  (``--collect-only``), which proves its paths and markers, since the suite itself runs it; one
  that names none is a user's project: a block's such commands run in order in that subprocess,
  in a project of the sandbox's tests. The README's quickstart test command is this suite, which
  ``.ci/run`` runs verbatim, as it runs the quickstart's ``pip install`` on a fresh virtual
  environment; ``pip`` commands are not run here.

**Size overrides.** Where an example is large (a 70B decoder, timing rounds, a whole zoo), the
table :data:`SIZE_OVERRIDES` replaces a piece of its text before it runs, each with its reason;
the example's options and code paths stay those the user copies. An override that no longer
matches any example fails (``test_every_override_is_used``), so the table cannot go stale.

**Needs.** An example that needs what this machine may lack (valgrind, a CUDA device, a C++
compiler) is skipped with the reason where it is absent (:data:`NEEDS`), never otherwise.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

COMMAND_LANGS = frozenset({"bash", "sh", "shell", "console"})
PYTHON_LANGS = frozenset({"python", "py"})

_FENCE = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,}|~{3,})(?P<info>[^`\n]*)$")


@dataclass(frozen=True)
class Example:
    """One example: where it is, its language (``bash`` or ``python``) and its text."""

    source: str  # "README.md:24", "docs/gate.md:40", "modelprof bench --help"
    lang: str
    code: str

    @property
    def id(self) -> str:
        return f"{self.source}"


@dataclass(frozen=True)
class Command:
    """One command of a command example: its words, and where its stdout goes."""

    example: Example
    words: tuple[str, ...]
    stdout_to: str | None = None  # "> FILE"
    pipe_to: tuple[str, ...] | None = None  # "| jq ..."

    @property
    def id(self) -> str:
        return f"{self.example.source}: {' '.join(self.words)}"[:160]


def markdown_examples(text: str, source: str) -> list[Example]:
    """The fenced ``bash``/``console``/``python`` blocks of a Markdown text."""
    found: list[Example] = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        match = _FENCE.match(lines[i])
        if not match:
            i += 1
            continue
        fence, indent = match["fence"], len(match["indent"])
        lang = match["info"].strip().split(" ")[0].lower() if match["info"].strip() else ""
        start = i + 1
        j = start
        while j < len(lines) and not lines[j].strip().startswith(fence):
            j += 1
        body = "\n".join(line[indent:] for line in lines[start:j])
        where = f"{source}:{i + 1}"  # the line of the opening fence
        if lang in COMMAND_LANGS:
            found.append(Example(where, "bash", body))
        elif lang in PYTHON_LANGS:
            found.append(Example(where, "python", body))
        i = j + 1
    return found


def epilog_examples() -> list[Example]:
    """The ``Examples:`` epilog of every ``modelprof`` command (as ``--help`` prints it)."""
    from pytest_modelprof.cli import COMMANDS

    return [Example(f"modelprof {c.name} --help", "bash", c.examples) for c in COMMANDS]


def documentation_files(root: Path = ROOT) -> list[Path]:
    """README.md and every Markdown page under docs/ (generated pages are built, not stored)."""
    return [root / "README.md", *sorted((root / "docs").rglob("*.md"))]


def all_examples(root: Path = ROOT) -> list[Example]:
    """Every example of the README, of docs/ and of the CLI's epilogs."""
    found: list[Example] = []
    for path in documentation_files(root):
        found += markdown_examples(path.read_text(encoding="utf-8"), str(path.relative_to(root)))
    return found + epilog_examples()


def logical_lines(code: str) -> Iterator[str]:
    """Lines with ``\\`` continuations joined; a ``$ `` prompt is dropped."""
    pending = ""
    for raw in code.splitlines():
        line = raw.rstrip()
        if line.startswith("$ "):
            line = line[2:]
        if line.endswith("\\"):
            pending += line[:-1]
            continue
        pending += line
        # A continuation that split a comma list (--arch a=1,\ b=2) joins without the indent.
        pending = re.sub(r",\s+(?=\w+=)", ",", pending)
        if pending.strip():
            yield pending.strip()
        pending = ""
    if pending.strip():
        yield pending.strip()


def commands(example: Example, overrides: Iterable[Override] = ()) -> list[Command]:
    """The commands of a command example, in order, each line with ``overrides`` applied."""
    found: list[Command] = []
    for line in logical_lines(example.code):
        words = shlex.split(apply_overrides(line, overrides), comments=True)
        for part in _split(words, "&&"):
            pipe = _split(part, "|")
            head = pipe[0]
            stdout_to = None
            if ">" in head:
                at = head.index(">")
                stdout_to, head = head[at + 1], head[:at]
            found.append(
                Command(example, tuple(head), stdout_to, tuple(pipe[1]) if len(pipe) > 1 else None)
            )
    return found


def _split(words: list[str], separator: str) -> list[list[str]]:
    parts: list[list[str]] = [[]]
    for word in words:
        if word == separator:
            parts.append([])
        else:
            parts[-1].append(word)
    return [p for p in parts if p]


@dataclass(frozen=True)
class Override:
    """A piece of an example's text replaced before it runs, and why."""

    pattern: str
    replacement: str
    reason: str


#: Size overrides: the example as written is large; these keep its options and code paths.
SIZE_OVERRIDES: tuple[Override, ...] = (
    Override(
        r"num_hidden_layers=80",
        "num_hidden_layers=2",
        "a 70B decoder: two of its 80 layers exercise the same code (layers repeat)",
    ),
    Override(r"hidden_size=8192", "hidden_size=512", "a 70B decoder's width, narrowed"),
    Override(r"intermediate_size=28672", "intermediate_size=1024", "a 70B decoder's MLP, narrowed"),
    Override(
        r"^(modelprof bench [^>]*?)(\s*>.*)?$",
        r"\1 --rounds 1 --warmup 0 --threads 1\2",
        "timing rounds of real forward and backward passes: one shows the same output",
    ),
    Override(
        r"^(modelprof graph .*--timed[^>]*?)(\s*>.*)?$",
        r"\1 --rounds 1\2",
        "timing rounds of a real forward",
    ),
    Override(
        r"bench resnet50 --batch 8",
        "bench resnet18 --batch 2 --input-shape 1,3,32,32",
        "real training steps of ResNet-50 at 8 x 224 px; ResNet-18 runs the same code",
    ),
    Override(
        r"--models resnet18,resnet50,mobilenet_v2,vit_b_16",
        "--models resnet18,mobilenet_v2",
        "fvcore traces each model on real tensors: two models show the same table",
    ),
    Override(
        r"fvcore --models resnet50 --verbose",
        "fvcore --models resnet18 --verbose",
        "fvcore traces the model on real tensors",
    ),
    Override(
        r"sweep resnet18 --batch 1,8,32$",
        "sweep resnet18 --batch 1,2 --input-size 32",
        "latency rounds at batch 32 and 224 px",
    ),
    Override(
        r"sweep resnet18 --batch 1,2,4 --max",
        "sweep resnet18 --batch 1,2,4 --no-latency --max",
        "latency rounds: the growth limit judges FLOPs",
    ),
    Override(r"--input-size 112,224,448", "--input-size 32,64,128", "input sizes"),
    Override(
        r"graph resnet50 --timed",
        "graph resnet18 --timed --input-shape 1,3,32,32",
        "timed forwards of ResNet-50 at 224 px; ResNet-18 runs the same code",
    ),
    Override(r"--context 32768", "--context 2048", "the KV cache of a 32k context"),
    Override(
        r"max_position_embeddings=32768", "max_position_embeddings=4096", "with the context above"
    ),
    Override(r"--prompt 4096", "--prompt 512", "with the context above"),
    Override(
        r"^(modelprof memory [^>]*?)(\s*>.*)?$",
        r"\1 --no-largest-batch\2",
        "the search for the largest batch estimates the step several times more",
    ),
    Override(r"--seq-len 4096", "--seq-len 256", "activations of 4,096 tokens"),
    Override(r"--seq-len 1024", "--seq-len 128", "activations of 1,024 tokens"),
    Override(
        r"resnet50 --train --batch 64",
        "resnet50 --train --batch 2",
        "a training step of ResNet-50 at batch 64",
    ),
    Override(
        r"resnet50\", batch=64", 'resnet50", batch=2', "a training step of ResNet-50 at batch 64"
    ),
    Override(r"--sweep-arch depth=2,4,8", "--sweep-arch depth=1,2", "depths"),
    Override(
        r"compile yolov8n.yaml --input-shape 1,3,320,320",
        "compile resnet18 --input-shape 1,3,32,32",
        "Dynamo traces YOLOv8n once per batch (about 50 s of CPU); ResNet-18 takes the same "
        "options through the same code",
    ),
)


@dataclass(frozen=True)
class Need:
    """Something an example needs that a machine may lack, and the -m marker that opts in."""

    pattern: str
    probe: str  # "valgrind", "cuda", "compiler"
    reason: str
    marker: str | None = None


#: What an example needs beyond this package.
NEEDS: tuple[Need, ...] = (
    Need(
        r"--instructions\b",
        "valgrind",
        "counts instructions under valgrind (minutes of CPU): runs with -m valgrind where "
        "valgrind is installed",
        "valgrind",
    ),
    Need(r"--device cuda\b", "cuda", "needs a CUDA device"),
    Need(
        r"--inductor\b",
        "compiler",
        "Inductor compiles C++ (minutes of CPU): runs with -m slow where a C++ compiler is "
        "installed",
        "slow",
    ),
)


def apply_overrides(text: str, overrides: Iterable[Override] = SIZE_OVERRIDES) -> str:
    """``text`` with every matching size override applied."""
    for override in overrides:
        text = re.sub(override.pattern, override.replacement, text, flags=re.MULTILINE)
    return text


def needs(text: str) -> list[Need]:
    """Everything ``text`` needs beyond this package."""
    return [need for need in NEEDS if re.search(need.pattern, text)]
