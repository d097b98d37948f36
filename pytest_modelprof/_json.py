"""JSON from files a user (or a fork's pull request) may have edited: parsed without surprises.

``json.loads`` takes ``NaN`` and ``Infinity``, integers of thousands of digits, and nesting
deep enough to raise ``RecursionError`` (in the parser or in whatever walks the result next).
:func:`load_json` refuses each with :class:`JSONProblem`, which names the field path
(``metrics.flops``), so the caller can say in one line which file holds what.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any, Final

__all__ = ["MAX_INT", "JSONProblem", "load_json", "field_path"]

#: Deeper nesting than any document of ours has (a results file reaches about 8 levels).
MAX_DEPTH: Final = 64
#: The largest integer a document may hold: what a 64-bit count can be. Larger ones are no
#: count any model has, and some do not even convert to a float.
MAX_INT: Final = 2**63 - 1

# A string (escapes included) or one structural character: enough to follow the nesting of text
# the parser refused as too deep, without recursing.
_TOKEN: Final = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{}:,]', re.DOTALL)


class _Huge(int):
    """An integer literal too long to be a count, kept for :func:`_check` to name its path."""


def _parse_int(text: str) -> int:
    # More digits than 2^63 has: never converted (Python refuses past 4,300 digits anyway).
    return _Huge(0) if len(text.lstrip("-")) > len(str(MAX_INT)) else int(text)


class JSONProblem(ValueError):
    """Why a text is not JSON a document may hold; ``path`` is the field path, ``""`` for the
    whole text."""

    def __init__(self, path: str, why: str) -> None:
        super().__init__(f"{path}: {why}" if path else why)
        self.path = path
        self.why = why


def field_path(parts: tuple[str | int, ...] | list[str | int]) -> str:
    """``("layers", 3, "flops")`` -> ``layers[3].flops``."""
    out = ""
    for part in parts:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def _too_deep_at(text: str) -> str:
    """The field path where ``text`` first nests deeper than :data:`MAX_DEPTH`."""
    frames: list[list[Any]] = []  # [kind, key or index] per open container
    last = ""
    for match in _TOKEN.finditer(text):
        token = match.group()
        if token.startswith('"'):
            try:
                last = json.loads(token)
            except ValueError:
                last = token[1:-1]
        elif token in "[{":
            if len(frames) >= MAX_DEPTH:
                break
            frames.append([token, 0 if token == "[" else ""])
        elif token in "]}":
            if frames:
                frames.pop()
        elif token == ":" and frames and frames[-1][0] == "{":
            frames[-1][1] = last
        elif token == "," and frames and frames[-1][0] == "[":
            frames[-1][1] += 1
    return _deep([frame[1] for frame in frames])


def _deep(parts: list[str | int] | tuple[str | int, ...]) -> str:
    """The path down a deep nest, shortened: a run of one key or index is said once
    (``metrics.flops[0]...``), and at most the first 10 levels are named."""
    run = 1
    while run < len(parts) and parts[-run - 1] == parts[-1]:
        run += 1
    keep = list(parts[: len(parts) - run + 1]) if run >= 3 else list(parts)
    return field_path(keep[:10]) + ("\u2026" if len(keep) < len(parts) or len(keep) > 10 else "")


def _check(data: Any, finite: bool) -> None:
    """Refuse non-finite numbers (with ``finite``), huge integers and deep nesting, naming the
    first one's path."""
    stack: list[tuple[Any, tuple[str | int, ...]]] = [(data, ())]
    while stack:
        value, path = stack.pop()
        if finite and isinstance(value, float) and not math.isfinite(value):
            raise JSONProblem(field_path(path), f"{json.dumps(value)} is not a finite number")
        if isinstance(value, _Huge) or (
            isinstance(value, int) and not isinstance(value, bool) and abs(value) > MAX_INT
        ):
            raise JSONProblem(field_path(path), "an integer beyond any count (2^63 - 1)")
        if isinstance(value, (dict, list)) and len(path) >= MAX_DEPTH:
            raise JSONProblem(_deep(path), f"nested deeper than {MAX_DEPTH} levels")
        if isinstance(value, dict):
            stack += [(v, (*path, str(k))) for k, v in reversed(value.items())]
        elif isinstance(value, list):
            stack += [(v, (*path, i)) for i, v in reversed(list(enumerate(value)))]


def load_json(text: str, *, finite: bool = True) -> Any:
    """``json.loads(text)``, refusing NaN and infinities (with ``finite``), integers beyond 64
    bits and nesting deeper than :data:`MAX_DEPTH` with :class:`JSONProblem`
    (``json.JSONDecodeError`` for text that is not JSON)."""
    try:
        data = json.loads(text, parse_int=_parse_int)
    except RecursionError:
        raise JSONProblem(_too_deep_at(text), f"nested deeper than {MAX_DEPTH} levels") from None
    _check(data, finite)
    return data
