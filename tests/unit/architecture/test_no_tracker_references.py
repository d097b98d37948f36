"""Code, tests, benchmarks and docs say why, never which tracker entry: the tracker is not in
the repository, so "see issue 18" tells the next reader nothing."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
# Spelled in two parts so this file does not match itself.
_REFERENCE = re.compile(r"\b" + "issue" + r"s? ?#?\d+", re.IGNORECASE)


def tracker_references(text: str) -> list[str]:
    """``"line N: text"`` for each line of ``text`` that cites a tracker entry by number."""
    return [
        f"line {n}: {line.strip()}"
        for n, line in enumerate(text.splitlines(), 1)
        if _REFERENCE.search(line)
    ]


def test_no_tracker_references() -> None:
    paths = [*(ROOT / "pytest_modelprof").rglob("*.py"), *(ROOT / "tests").rglob("*.py")]
    paths += [*(ROOT / "benchmarks").rglob("*.py"), *(ROOT / "docs").rglob("*.md")]
    paths.append(ROOT / "README.md")
    found = {
        p.relative_to(ROOT).as_posix(): refs
        for p in sorted(paths)
        if p != Path(__file__).resolve()
        and (refs := tracker_references(p.read_text(encoding="utf-8")))
    }
    assert found == {}, f"say why instead of citing the tracker: {found}"


def test_the_scan_finds_a_tracker_reference() -> None:
    # The check itself can fail: each spelling is found, a plain number or word is not.
    text = "x = 1  # Issue 19: too wide\n# see issues #7\n# 19 issues of the format\n"
    assert tracker_references(text) == [
        "line 1: x = 1  # Issue 19: too wide",
        "line 2: # see issues #7",
    ]
