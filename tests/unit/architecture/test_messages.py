"""Messages close their sentences once: text from elsewhere (an exception) loses its full stop.

An exception's message may end with a full stop or not; a message of ours that puts one after it
read "(got `embed_dim`: 71 and `num_heads`: 16).. Check the builder arguments". Such text goes
through ``errors.clause`` (or ``classify.short``, which uses it) before ours goes on.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[3] / "pytest_modelprof"
# Names that hold text written elsewhere: an exception, a failure's text, a reason.
FOREIGN = re.compile(
    r"^(exc|e|err|error|cause|refused|why|reason|message|msg|text|f\.text|str\(\w+\))$"
)


def doubled_stops(source: str) -> list[str]:
    """``"line N: {exc}."`` for each f-string that puts a full stop right after foreign text."""
    found: list[str] = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.JoinedStr):
            continue
        for value, after in zip(node.values, node.values[1:], strict=False):
            if not (isinstance(value, ast.FormattedValue) and isinstance(after, ast.Constant)):
                continue
            text = after.value
            closes = isinstance(text, str) and text.startswith(".") and not text.startswith("..")
            converted = value.conversion not in (-1, ord("s"))  # !r ends with a quote
            expression = ast.unparse(value.value)
            if closes and not converted and FOREIGN.match(expression):
                found.append(f"line {node.lineno}: {{{expression}}}.")
    return found


def test_no_message_closes_foreign_text_with_a_second_full_stop() -> None:
    offenders = {
        path.relative_to(PACKAGE.parent).as_posix(): found
        for path in sorted(PACKAGE.rglob("*.py"))
        if (found := doubled_stops(path.read_text(encoding="utf-8")))
    }
    assert offenders == {}, f"wrap the text in errors.clause(): {offenders}"


def test_the_scan_finds_a_full_stop_after_foreign_text() -> None:
    source = (
        'a = f"failed: {exc}. Check it"\n'
        'b = f"failed: {clause(exc)}. Check it"\n'
        'c = f"unknown {text!r}. Presets"\n'
        'd = f"{type(exc).__name__}: {exc}"\n'
    )
    assert doubled_stops(source) == ["line 1: {exc}."]


def test_clause_drops_one_closing_full_stop() -> None:
    from pytest_modelprof.errors import clause

    assert clause(ValueError("got 71.")) == "got 71"
    assert clause("got 71") == "got 71"
    assert clause("and so on...") == "and so on..."  # an ellipsis is not a full stop
    assert clause("  spaced.\n") == "spaced"


def test_a_builders_error_ending_in_a_full_stop_gets_one() -> None:
    pytest.importorskip("transformers")
    from pytest_modelprof.errors import ModelBuildError
    from pytest_modelprof.llm import profile_llm

    with pytest.raises(ModelBuildError) as info:
        profile_llm("hf:gpt2", n_embd=71, n_head=16, n_layer=1)
    assert "16)." in str(info.value) and ".." not in str(info.value)
