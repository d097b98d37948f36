"""The examples test itself: it finds every example, and a planted broken one fails it."""

from __future__ import annotations

from pathlib import Path

import pytest
from doc_examples import (
    Example,
    Override,
    all_examples,
    apply_overrides,
    commands,
    epilog_examples,
    markdown_examples,
)
from run_python_examples import run_one
from test_doc_examples import run_command

PAGE = """# A page

Text with `modelprof inline --ignored` code.

```bash
modelprof profile resnet18 --input-shape 1,3,32,32 \\
    --top 2          # a comment
modelprof profile resnet18 --json > r.json && modelprof history --json | jq .tests
```

```yaml
name: not an example to run
```

- a list item with a block:

    ```python
    print("indented")
    ```
"""


def test_blocks_are_found_with_their_lines_and_languages() -> None:
    found = markdown_examples(PAGE, "docs/page.md")
    assert [(e.source, e.lang) for e in found] == [
        ("docs/page.md:5", "bash"),
        ("docs/page.md:17", "python"),
    ]
    assert found[1].code == 'print("indented")'


def test_commands_join_continuations_and_split_chains_pipes_and_redirects() -> None:
    (example, _) = markdown_examples(PAGE, "docs/page.md")
    got = [(c.words, c.stdout_to, c.pipe_to) for c in commands(example)]
    assert got == [
        (
            ("modelprof", "profile", "resnet18", "--input-shape", "1,3,32,32", "--top", "2"),
            None,
            None,
        ),
        (("modelprof", "profile", "resnet18", "--json"), "r.json", None),
        (("modelprof", "history", "--json"), None, ("jq", ".tests")),
    ]


def test_every_source_of_examples_is_collected() -> None:
    sources = {e.source.split(":")[0] for e in all_examples()}
    assert "README.md" in sources
    assert any(s.startswith("docs/") for s in sources)
    from pytest_modelprof.cli import COMMANDS

    assert {f"modelprof {c.name} --help" for c in COMMANDS} <= sources
    # Every epilog line that runs modelprof becomes a command.
    for example in epilog_examples():
        lines = [ln for ln in example.code.splitlines() if ln.strip().startswith("modelprof")]
        assert len(commands(example)) == len(lines), example.source


def test_an_override_shrinks_the_example_and_keeps_the_rest() -> None:
    text = "modelprof llm hf:mistral --context 32768 --dtype bfloat16 --json"
    assert (
        apply_overrides(text) == "modelprof llm hf:mistral --context 2048 --dtype bfloat16 --json"
    )
    custom = (Override(r"--batch 64", "--batch 2", "why"),)
    assert apply_overrides("x --batch 64 --top 3", custom) == "x --batch 2 --top 3"
    # Overrides apply to a command's whole logical line, continuations joined.
    example = Example("x", "bash", "modelprof bench resnet18 \\\n    --json > out.json")
    (command,) = commands(
        example, (Override(r"^(modelprof bench [^>]*?)(\s*>.*)?$", r"\1 --rounds 1\2", "why"),)
    )
    assert command.words == ("modelprof", "bench", "resnet18", "--json", "--rounds", "1")
    assert command.stdout_to == "out.json"


def test_a_planted_broken_command_example_fails(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # As if an epilog still showed an option that was renamed away.
    planted = Example(
        "modelprof profile --help",
        "bash",
        "  modelprof profile resnet18 --input-shape 1,3,32,32 --topp 5",
    )
    (command,) = commands(planted)
    with pytest.raises(AssertionError, match="exit 2"):
        run_command(command, tmp_path, {}, capsys, monkeypatch)
    # The same example, fixed, passes.
    (fixed,) = commands(Example("x", "bash", planted.code.replace("--topp", "--top")))
    run_command(fixed, tmp_path, {}, capsys, monkeypatch)


def test_a_planted_unknown_program_fails(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    (command,) = commands(Example("docs/x.md:1", "bash", "curl https://example.invalid"))
    with pytest.raises(AssertionError, match="teach doc_examples.py"):
        run_command(command, tmp_path, {}, capsys, monkeypatch)


def test_a_planted_broken_python_example_fails(tmp_path: Path) -> None:
    # A name the package does not have (as after a rename), then the right one.
    broken = run_one(tmp_path, 0, "from pytest_modelprof import profile_modle\n")
    assert broken is not None and "profile_modle" in broken
    assert run_one(tmp_path, 1, "from pytest_modelprof import profile_model\n") is None
    # The placeholders the pages use are defined.
    assert run_one(tmp_path, 2, "assert MyModel()(torch.ones(1, 3, 8, 8)).shape == (1, 10)") is None
