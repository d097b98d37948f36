"""Text that fits the terminal: messages wrapped under their own indentation (a leaf).

Pure functions of text and a width (the terminal's, as pytest measures it: ``COLUMNS`` or the
tty, 80 otherwise). JSON and the other reports keep the unwrapped text.
"""

from __future__ import annotations

import textwrap
from collections.abc import Sequence

__all__ = ["fit_line", "fit_text", "wrap_under", "wrap_items"]

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
    """One line as lines of at most ``width`` columns, continued two columns further in."""
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
