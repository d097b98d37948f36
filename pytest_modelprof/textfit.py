"""Text that fits the terminal: messages wrapped under their own indentation, and the one table
layout every command's text output uses (a leaf).

Pure functions of text and a width (the terminal's, as pytest and :func:`terminal_width`
measure it: ``COLUMNS`` or the tty, 80 otherwise). JSON and the other reports keep the
unwrapped text. :func:`plain` is the
one place that keeps control characters out of everything shown to a person: the terminal
lines fitted here, every report's view, the PR comment and the GitHub annotations.
"""

from __future__ import annotations

import re
import shutil
import textwrap
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Final, Literal

__all__ = [
    "Column",
    "cut_middle",
    "cut_test_id",
    "fit_line",
    "fit_text",
    "layout_table",
    "plain",
    "terminal_width",
    "wrap_items",
    "wrap_under",
]

Align = Literal["<", ">"]

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


def terminal_width(minimum: int = 40) -> int:
    """The width a command writes to: ``COLUMNS``, else the tty's, else 80 (as pytest does),
    never under ``minimum``."""
    return max(minimum, shutil.get_terminal_size(fallback=(80, 24)).columns)


def cut_middle(name: str, width: int) -> str:
    """``name`` in ``width`` columns, cut in its middle: ``model.22.cv3.0…conv``. The last
    dotted component (a layer's own name) is kept whole when it fits in half the width, since
    it tells two siblings apart; an indentation (a tree's nesting) stays visible."""
    if len(name) <= width:
        return name
    if width <= 1:
        return ELLIPSIS[:width]
    bare = name.lstrip(" ")
    lead = min(len(name) - len(bare), max(0, width - 6))
    if lead:
        return name[:lead] + cut_middle(bare, width - lead)
    tail = name.rpartition(".")[2]
    keep_tail = min(len(tail), (width - 1) // 2)
    head = width - 1 - keep_tail
    return name[:head] + ELLIPSIS + (name[-keep_tail:] if keep_tail else "")


def cut_test_id(label: str, width: int) -> str:
    """A test id cut in its file part, keeping the test's own name: ``test_mo…::test_widen``;
    a name too long for that is cut in its middle too."""
    if len(label) <= width:
        return label
    cut = label.rfind("::")
    head, tail = (label[:cut], label[cut:]) if cut > 0 else ("", label)
    keep = min(len(head), 4)  # enough of the file to tell modules apart at a glance
    if len(tail) + 1 + keep <= width:
        return label[: width - 1 - len(tail)] + ELLIPSIS + tail
    room = max(1, width - 1 - keep)  # the name itself, cut in its middle: its end (a param)
    half = (room - 1) // 2
    name = tail[: half + 1] + ELLIPSIS + tail[len(tail) - (room - 2 - half) :] if room > 2 else ""
    return (label[:keep] + ELLIPSIS + name)[:width]


@dataclass(frozen=True)
class Column:
    """One column of a text table.

    ``cut`` shortens a cell the layout made too narrow (:func:`cut_middle` by default);
    ``drop`` ranks the columns that may be left out when cutting is not enough (the lowest
    first; ``None``: always shown).
    """

    header: str
    align: Align = "<"
    drop: int | None = None
    cut: Callable[[str, int], str] = field(default=cut_middle, compare=False)


@dataclass(frozen=True)
class Table:
    """A laid-out table: its lines and the headers of the columns left out to fit."""

    lines: list[str]
    left_out: list[str]


def _fit_widths(
    columns: Sequence[Column],
    natural: Sequence[int],
    width: int,
    shrink: Sequence[tuple[int, int]],
    spare: int,
) -> tuple[list[int], list[int]]:
    """(column widths, kept columns) for :func:`layout_table`; ``spare`` is the indent's
    width, the gaps are in ``natural``'s neighbours."""
    widths = list(natural)
    keep = list(range(len(columns)))

    def excess() -> int:
        return spare + sum(widths[i] + GAP for i in keep) - GAP - width

    for col, minimum in shrink:
        if excess() > 0 and col < len(widths):
            widths[col] = max(min(minimum, widths[col]), widths[col] - excess())
    droppable = sorted(
        (i for i, c in enumerate(columns) if c.drop is not None),
        key=lambda i: (columns[i].drop, -i),
    )
    for i in droppable:
        if excess() <= 0:
            break
        keep.remove(i)
    for col, _ in shrink:  # the room left over goes back, in the order it was taken
        if col in keep:
            widths[col] = min(natural[col], widths[col] + max(0, -excess()))
    return widths, keep


GAP = 2  # blanks between two columns


def layout_table(
    columns: Sequence[Column],
    rows: Sequence[Sequence[str]],
    width: int | None,
    *,
    shrink: Sequence[tuple[int, int]] = ((0, 8),),
    indent: str = "",
    rule: bool = False,
) -> Table:
    """Lay out ``rows`` under ``columns`` in at most ``width`` columns (``None``: no limit).

    Too wide, the ``shrink`` columns give up space in order, each down to its minimum
    (``(column, minimum)`` pairs: the name column to 24, then the type column to 10, ...),
    their cells cut by the column's ``cut``; still too wide, columns are left out by their
    ``drop`` rank (ties from the right) and the room they leave goes back to the shrunk
    columns. A line still too wide is cut at the width. ``rule`` puts dashes under the headers.
    """
    rows = [[plain(cell) for cell in row] for row in rows]
    natural = [max([len(c.header), *(len(row[i]) for row in rows)]) for i, c in enumerate(columns)]
    if width is None:
        widths, keep = natural, list(range(len(columns)))
    else:
        widths, keep = _fit_widths(columns, natural, width, shrink, len(indent))

    def cut(text: str) -> str:
        return text if width is None or len(text) <= width else text[: width - 1] + ELLIPSIS

    def line(cells: Sequence[str]) -> str:
        parts = []
        for i in keep:
            column, cell = columns[i], cells[i]
            text = column.cut(cell, widths[i]) if len(cell) > widths[i] else cell
            parts.append(text.ljust(widths[i]) if column.align == "<" else text.rjust(widths[i]))
        return cut((indent + (" " * GAP).join(parts)).rstrip())

    lines = [line([c.header for c in columns])]
    if rule:
        lines.append(cut(indent + (" " * GAP).join("-" * widths[i] for i in keep)))
    lines += [line(r) for r in rows]
    return Table(lines, [columns[i].header for i in range(len(columns)) if i not in keep])
