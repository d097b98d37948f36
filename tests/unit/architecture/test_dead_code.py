"""Every function, class and method of the package is used somewhere: by the package, a test,
a benchmark, a template or the docs. Dead code misleads the next reader into keeping it in step.

A name counts as used when it appears anywhere besides its own definition and ``__all__``;
pytest hooks (``pytest_*``) and dunder methods are called by name from outside.
"""

from __future__ import annotations

import ast
import re
from collections import Counter
from collections.abc import Iterable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
PACKAGE = ROOT / "pytest_modelprof"
# Names known to be dead and kept for now ("path: name"), each with its reason. The list is
# checked for entries that are no longer dead, so it cannot hide a name that dies again, and
# this file is not a reader (naming a name here does not use it).
KNOWN: frozenset[str] = frozenset()
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _words(paths: Iterable[Path]) -> Counter[str]:
    words: Counter[str] = Counter()
    for path in paths:
        words.update(_WORD.findall(path.read_text(encoding="utf-8", errors="replace")))
    return words


def _readers() -> list[Path]:
    """Every file that can use a name of the package."""
    out = [*PACKAGE.rglob("*.py"), *(ROOT / "tests").rglob("*.py")]
    out += [*(ROOT / "benchmarks").rglob("*.py"), *(ROOT / "templates").glob("*")]
    out += [ROOT / "README.md", *(ROOT / "docs").rglob("*.md")]
    return [p for p in out if p.is_file() and p != Path(__file__).resolve()]


def _exported(source: str) -> set[str]:
    """Names listed in the module's ``__all__`` (one more occurrence each)."""
    tree = ast.parse(source)
    out: set[str] = set()
    for node in ast.walk(tree):
        target = getattr(node, "target", None) or next(iter(getattr(node, "targets", [])), None)
        if isinstance(target, ast.Name) and target.id == "__all__":
            value = getattr(node, "value", None)
            if isinstance(value, (ast.List, ast.Tuple)):
                out.update(str(e.value) for e in value.elts if isinstance(e, ast.Constant))
    return out


def _defined(tree: ast.Module) -> list[str]:
    """Functions, classes and methods at any depth, and the module's own constants."""
    names = [
        node.name
        for node in ast.walk(tree)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
    ]
    for stmt in tree.body:
        targets = stmt.targets if isinstance(stmt, ast.Assign) else []
        targets += [stmt.target] if isinstance(stmt, ast.AnnAssign) else []
        names += [t.id for t in targets if isinstance(t, ast.Name)]
    return [n for n in names if not n.startswith(("__", "pytest_"))]


def unused(modules: Iterable[tuple[str, str]], words: Counter[str]) -> list[str]:
    """``"path: name"`` of every name ``modules`` (path, source) define that nothing uses.

    ``words`` counts every identifier in every file that can use one.
    """
    out: list[str] = []
    for where, source in modules:
        exported = _exported(source)
        for name in _defined(ast.parse(source)):
            if words[name] - 1 - (name in exported) <= 0:
                out.append(f"{where}: {name}")
    return out


def _package_dead() -> list[str]:
    modules = [
        (p.relative_to(ROOT).as_posix(), p.read_text(encoding="utf-8"))
        for p in sorted(PACKAGE.rglob("*.py"))
    ]
    return unused(modules, _words(_readers()))


def stale(known: Iterable[str], dead: Iterable[str]) -> list[str]:
    """Entries of the allowlist ``known`` that are no longer dead (used now, or gone)."""
    return sorted(set(known) - set(dead))


def test_no_dead_code() -> None:
    dead = [d for d in _package_dead() if d not in KNOWN]
    assert dead == [], f"defined but used nowhere (delete them, or use them): {dead}"


def test_the_allowlist_names_only_dead_code() -> None:
    # An entry kept after its name was used or deleted would let that name die again unseen.
    assert stale(KNOWN, _package_dead()) == [], "take these off KNOWN"


def test_the_scan_finds_a_stale_allowlist_entry() -> None:
    # The check itself can fail: an entry whose name is no longer dead is named.
    assert stale({"m.py: orphan", "m.py: revived"}, ["m.py: orphan", "n.py: new"]) == [
        "m.py: revived"
    ]


def test_the_scan_finds_an_unused_function() -> None:
    # The check itself can fail: a helper that only its definition and __all__ name is found.
    source = '__all__ = ["used", "orphan"]\nLIMIT = 1\ndef used(): ...\ndef orphan(): ...\n'
    words = Counter({"used": 3, "orphan": 2, "LIMIT": 1, "__all__": 1})
    assert unused([("m.py", source)], words) == ["m.py: orphan", "m.py: LIMIT"]
