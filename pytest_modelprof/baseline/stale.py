"""Stale baselines: files that no test uses any more.

A baseline is stale when no profile of this run used it and we *know* its test no longer needs
it: its test ran to the end without using it (a ``name=`` went away), or a collector that
would contain the test (its module or class) was collected and the test is not among its
children (it was renamed or deleted), or its module file is gone. Tests that were
deselected, skipped or failed early keep their baselines, so a partial run (``-k``, one file,
one node id, ``-x``) never reports the baselines of tests it did not look at.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Set
from pathlib import Path

from pytest_modelprof.baseline.store import iter_baseline_files

__all__ = ["find_stale", "prune", "parent_nodeid"]


def parent_nodeid(nodeid: str) -> str:
    """``d/t.py::C::f[x::y]`` -> ``d/t.py::C`` -> ``d/t.py`` -> ``d`` -> ``""``."""
    base = nodeid.partition("[")[0] if nodeid.endswith("]") else nodeid
    if "::" in base:
        return base.rsplit("::", 1)[0]
    return base.rsplit("/", 1)[0] if "/" in base else ""


def _gone(test: str, expanded: Mapping[str, Set[str]]) -> bool:
    """Whether the nearest collected ancestor of ``test`` lacks the branch leading to it."""
    node = test
    while node:
        parent = parent_nodeid(node)
        children = expanded.get(parent)
        if children is not None:
            return node not in children
        node = parent
    return False


def _owner(path: Path) -> str | None:
    """The node id stored in a baseline file (plain ``json``: no pydantic at session end)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return None
    test = data.get("test") if isinstance(data, dict) else None
    return test if isinstance(test, str) else None


def find_stale(
    directory: Path,
    *,
    used: Set[str],
    expanded: Mapping[str, Set[str]],
    completed: Set[str],
    rootdir: Path,
) -> list[Path]:
    """The stale baseline files under ``directory``.

    ``used`` holds relative posix paths, ``expanded`` maps each collected collector's node id
    to its children's node ids (before deselection), ``completed`` the tests that ran through.
    """
    stale = []
    for path in iter_baseline_files(directory):
        if path.relative_to(directory).as_posix() in used:
            continue
        test = _owner(path)
        if test is None:
            continue  # unreadable: a test that uses it reports it; never delete what we can't read
        module = test.partition("::")[0]
        if test in completed or _gone(test, expanded) or not (rootdir / module).is_file():
            stale.append(path)
    return stale


def prune(directory: Path, paths: Iterable[Path]) -> None:
    """Delete ``paths`` and the directories under ``directory`` they leave empty."""
    for path in paths:
        path.unlink(missing_ok=True)
        parent = path.parent
        while parent != directory and parent.is_relative_to(directory):
            try:
                parent.rmdir()
            except OSError:
                break
            parent = parent.parent
