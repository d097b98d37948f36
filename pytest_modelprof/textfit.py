"""Text that fits the terminal: messages wrapped under their own indentation (a leaf).

Pure functions of text and a width (the terminal's, as pytest measures it: ``COLUMNS`` or the
tty, 80 otherwise). JSON and the other reports keep the unwrapped text. :func:`plain` is the
one place that keeps control characters out of everything shown to a person: the terminal
lines fitted here, every report's view, the PR comment and the GitHub annotations.
"""

from __future__ import annotations

import re
import textwrap
from collections.abc import Sequence
from typing import Final

__all__ = ["fit_line", "fit_text", "wrap_under", "wrap_items", "plain"]

#: C0 controls but newline and tab, DEL, C1 controls (``\x9b`` is a terminal's CSI too), and
#: the bidi marks, embeddings, overrides and isolates that make a line read out of order.
_CONTROL: Final = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]"
)


def plain(text: str) -> str:
    """``text`` with every control character but newline and tab written as its escape
    (``\x1b``, ``\r``, ``\u202e``): a test id, a model or layer name is anyone's text, and a
    terminal escape in it must not repaint a CI log or a bidi override reorder a line; the
    escape shows the reader that the name holds one. Idempotent."""
    if _CONTROL.search(text) is None:
        return text
    return _CONTROL.sub(lambda m: m.group().encode("unicode_escape").decode("ascii"), text)

CONTINUE = "  "  # a wrapped line's continuation indent, under its own first line
ELLIPSIS = "\u2026"


def wrap_under(text: str, width: int, indent: str) -> list[str]:
    """``text`` wrapped to ``width`` at ``indent``, continued two columns further in; a word
    longer than a line (a path, a command) is cut rather than overflowing it."""
    return textwrap.wrap(
        text,
        width=width,
        initial_indent=indent,
        subsequent_indent=indent + CONTINUE,
        break_on_hyphens=False,
        break_long_words=True,
    )


def fit_line(line: str, width: int) -> list[str]:
    """One line as lines of at most ``width`` columns, continued two columns further in (its
    control characters written as escapes: :func:`plain`)."""
    line = plain(line)
    if len(line) <= width:
        return [line]
    body = line.lstrip(" ")
    indent = line[: min(len(line) - len(body), max(0, width // 2 - len(CONTINUE)))]
    return wrap_under(body, width, indent) or [line[:width]]


def fit_text(text: str, width: int) -> str:
    """Every line of ``text`` fitted by :func:`fit_line`; blank lines stay."""
    return "\n".join(out for line in text.split("\n") for out in fit_line(line, width))


def wrap_items(label: str, items: Sequence[str], width: int, indent: str) -> list[str]:
    """``label: a, b, c`` wrapped at the commas only, so ``op x3`` never splits."""
    lines: list[str] = []
    current = f"{indent}{label}: "
    for i, item in enumerate(items):
        piece = item + ("," if i < len(items) - 1 else "")
        if len(current) + len(piece) > width and current.strip():
            lines.append(current.rstrip())
            current = indent + CONTINUE
        current += piece + " "
    lines.append(current.rstrip())
    return [line if len(line) <= width else line[: width - 1] + ELLIPSIS for line in lines]
