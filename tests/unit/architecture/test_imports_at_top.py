"""Our own modules are imported at the top, where a reader sees each module's dependencies.

An import of ``pytest_modelprof`` inside a function is allowed only where moving it up would
load something the importer must not load when it is imported: torch (the plugin in a run that
profiles nothing, the CLI parsing its arguments, the documents the gate compares), pydantic or
jinja2 (``--help`` and a pytest run without markers load neither), or where a package's
``__getattr__`` hands names out lazily. Each such pair is listed in :data:`ALLOWED` with its
reason; an entry that no longer matches an import fails too, so the list only shrinks.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[3] / "pytest_modelprof"

TORCH = "torch boundary: the imported module imports torch; the importer stays torch-free"
LIGHT = (
    "light start: the imported module imports pydantic or jinja2, which the plugin without "
    "markers and the CLI parser never load"
)
LAZY = "lazy public API: the package's __getattr__ loads the heavy half on first use"
SERVER = (
    "torch boundary: the instruction server imports torch only after pointing stdout away "
    "from its reply channel"
)

#: (importing module, imported module) -> why the import sits inside a function.
ALLOWED: dict[tuple[str, str], str] = {
    ("pytest_modelprof._plugin_parts", "pytest_modelprof.gate.collect"): LIGHT,
    ("pytest_modelprof._plugin_parts", "pytest_modelprof.results.record"): LIGHT,
    ("pytest_modelprof.baseline.stale", "pytest_modelprof.baseline.document"): LIGHT,
    ("pytest_modelprof.cli._common", "pytest_modelprof.machines"): LIGHT,
    ("pytest_modelprof.cli._common", "pytest_modelprof.profile"): TORCH,
    ("pytest_modelprof.cli.sweep", "pytest_modelprof.runtime.sweep"): TORCH,
    ("pytest_modelprof.cli.sweep", "pytest_modelprof.runtime.sweep_result"): LIGHT,
    ("pytest_modelprof.cli.bench", "pytest_modelprof.history.paired"): TORCH,
    ("pytest_modelprof.cli.bench", "pytest_modelprof.machines"): LIGHT,
    ("pytest_modelprof.cli.bench", "pytest_modelprof.predict"): LIGHT,
    ("pytest_modelprof.cli.bench", "pytest_modelprof.profile"): TORCH,
    ("pytest_modelprof.cli.bench", "pytest_modelprof.runtime.bench"): TORCH,
    ("pytest_modelprof.cli.bench", "pytest_modelprof.runtime.module_timing"): TORCH,
    ("pytest_modelprof.cli.bisect", "pytest_modelprof.history.bisect"): LIGHT,
    ("pytest_modelprof.cli.bisect", "pytest_modelprof.history.build"): LIGHT,
    ("pytest_modelprof.cli.bisect", "pytest_modelprof.history.git"): LIGHT,
    ("pytest_modelprof.cli.bisect", "pytest_modelprof.history.view"): LIGHT,
    ("pytest_modelprof.cli.comment", "pytest_modelprof.report.comment"): LIGHT,
    ("pytest_modelprof.cli.compare", "pytest_modelprof.gate.documents"): LIGHT,
    ("pytest_modelprof.cli.compare", "pytest_modelprof.history.paired"): TORCH,
    ("pytest_modelprof.cli.compare", "pytest_modelprof.report.text"): LIGHT,
    ("pytest_modelprof.cli.compare", "pytest_modelprof.report.view"): LIGHT,
    ("pytest_modelprof.cli.compare", "pytest_modelprof.results.document"): LIGHT,
    ("pytest_modelprof.cli.compile", "pytest_modelprof.compile"): LIGHT,
    ("pytest_modelprof.cli.fvcore", "pytest_modelprof.report.listings"): LIGHT,
    ("pytest_modelprof.cli.fvcore", "pytest_modelprof.runtime.fvcore"): TORCH,
    ("pytest_modelprof.cli.fvcore", "pytest_modelprof.schema"): LIGHT,
    ("pytest_modelprof.cli.graph", "pytest_modelprof.exports.graph"): LIGHT,
    ("pytest_modelprof.cli.graph", "pytest_modelprof.profile"): TORCH,
    ("pytest_modelprof.cli.graph", "pytest_modelprof.runtime.module_timing"): TORCH,
    ("pytest_modelprof.cli.history", "pytest_modelprof.history"): LIGHT,
    ("pytest_modelprof.cli.history", "pytest_modelprof.history.render"): LIGHT,
    ("pytest_modelprof.cli.history", "pytest_modelprof.history.view"): LIGHT,
    ("pytest_modelprof.cli.listing", "pytest_modelprof.report.listings"): LIGHT,
    ("pytest_modelprof.cli.listing", "pytest_modelprof.schema"): LIGHT,
    ("pytest_modelprof.cli.llm", "pytest_modelprof.llm"): TORCH,
    ("pytest_modelprof.cli.llm", "pytest_modelprof.machines"): LIGHT,
    ("pytest_modelprof.cli.memory", "pytest_modelprof.fit.estimate"): TORCH,
    ("pytest_modelprof.cli.memory", "pytest_modelprof.fit.verdict"): LIGHT,
    ("pytest_modelprof.cli.memory", "pytest_modelprof.machines"): LIGHT,
    ("pytest_modelprof.cli.merge", "pytest_modelprof.results.document"): LIGHT,
    ("pytest_modelprof.cli.merge", "pytest_modelprof.results.merge"): LIGHT,
    ("pytest_modelprof.cli.partition", "pytest_modelprof.analysis.partition"): LIGHT,
    ("pytest_modelprof.cli.partition", "pytest_modelprof.report.partition_text"): LIGHT,
    ("pytest_modelprof.cli.partition", "pytest_modelprof.schema"): LIGHT,
    ("pytest_modelprof.cli.profile", "pytest_modelprof.exports.tabular"): LIGHT,
    ("pytest_modelprof.cli.profile", "pytest_modelprof.machines"): LIGHT,
    ("pytest_modelprof.cli.profile", "pytest_modelprof.predict"): LIGHT,
    ("pytest_modelprof.cli.profile", "pytest_modelprof.profile"): TORCH,
    ("pytest_modelprof.cli.profile", "pytest_modelprof.report.prediction"): LIGHT,
    ("pytest_modelprof.cli.profile", "pytest_modelprof.report.terminal"): LIGHT,
    ("pytest_modelprof.cli.profile", "pytest_modelprof.schema"): LIGHT,
    ("pytest_modelprof.cli.report", "pytest_modelprof.report.text"): LIGHT,
    ("pytest_modelprof.cli.report", "pytest_modelprof.report.view"): LIGHT,
    ("pytest_modelprof.cli.report", "pytest_modelprof.results.document"): LIGHT,
    ("pytest_modelprof.compile", "pytest_modelprof.compile"): LAZY,
    ("pytest_modelprof.costs.registry", "pytest_modelprof._compat"): TORCH,
    ("pytest_modelprof.fit", "pytest_modelprof.fit"): LAZY,
    ("pytest_modelprof.fit.gate", "pytest_modelprof.fit.estimate"): TORCH,
    ("pytest_modelprof.gate.cache", "pytest_modelprof.profile"): TORCH,
    ("pytest_modelprof.gate.collect", "pytest_modelprof.capture.real"): TORCH,
    ("pytest_modelprof.gate.collect", "pytest_modelprof.compile"): TORCH,
    ("pytest_modelprof.gate.collect", "pytest_modelprof.runtime"): TORCH,
    ("pytest_modelprof.gate.collect", "pytest_modelprof.runtime.fvcore"): TORCH,
    ("pytest_modelprof.gate.collect", "pytest_modelprof.runtime.paired"): TORCH,
    ("pytest_modelprof.gate.collect", "pytest_modelprof.runtime.sweep"): TORCH,
    ("pytest_modelprof.gate.judge", "pytest_modelprof.runtime"): TORCH,
    ("pytest_modelprof.gate.judge", "pytest_modelprof.runtime.paired"): TORCH,
    ("pytest_modelprof.history.render", "pytest_modelprof.report.html"): LIGHT,
    ("pytest_modelprof.instructions", "pytest_modelprof.instructions.counts"): LAZY,
    ("pytest_modelprof.instructions.client", "pytest_modelprof.instructions.counts"): LIGHT,
    ("pytest_modelprof.instructions.client", "pytest_modelprof.profile"): TORCH,
    ("pytest_modelprof.instructions.server", "pytest_modelprof._compat"): SERVER,
    ("pytest_modelprof.instructions.server", "pytest_modelprof.profile"): SERVER,
    ("pytest_modelprof.instructions.server", "pytest_modelprof.runtime.timing"): SERVER,
    ("pytest_modelprof.llm", "pytest_modelprof.llm"): LAZY,
    ("pytest_modelprof.llm", "pytest_modelprof.llm.engine"): LAZY,
    ("pytest_modelprof.llm.gate", "pytest_modelprof.llm.engine"): TORCH,
    ("pytest_modelprof.llm.growth", "pytest_modelprof.llm.engine"): TORCH,
    ("pytest_modelprof.models._meta", "pytest_modelprof._compat"): TORCH,
    ("pytest_modelprof.plugin", "pytest_modelprof.gate.evaluate"): LIGHT,
    ("pytest_modelprof.plugin", "pytest_modelprof.gate.renames"): LIGHT,
    ("pytest_modelprof.plugin", "pytest_modelprof.history.paired"): TORCH,
    ("pytest_modelprof.plugin", "pytest_modelprof.profile"): TORCH,
    ("pytest_modelprof.plugin", "pytest_modelprof.report.summary"): LIGHT,
    ("pytest_modelprof.plugin", "pytest_modelprof.results.record"): LIGHT,
    ("pytest_modelprof.predict.gate", "pytest_modelprof.profile"): TORCH,
    ("pytest_modelprof.report.session", "pytest_modelprof.report.github"): LIGHT,
    ("pytest_modelprof.report.session", "pytest_modelprof.report.html"): LIGHT,
    ("pytest_modelprof.report.session", "pytest_modelprof.report.markdown"): LIGHT,
    ("pytest_modelprof.report.session", "pytest_modelprof.report.view"): LIGHT,
    ("pytest_modelprof.report.session", "pytest_modelprof.results.document"): LIGHT,
    ("pytest_modelprof.report.session", "pytest_modelprof.results.record"): LIGHT,
}


def _module_name(path: Path, root: Path) -> str:
    parts = path.relative_to(root.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imported(node: ast.Import | ast.ImportFrom, name: str, is_package: bool) -> list[str]:
    """The modules an import statement names (a relative one resolved against ``name``)."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    base = node.module or ""
    if node.level:
        package = name if is_package else name.rpartition(".")[0]
        parent = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
        base = f"{parent}.{base}" if base else parent
    return [base]


def in_function_imports(
    root: Path, skip: frozenset[str] = frozenset()
) -> list[tuple[str, str, str]]:
    """``(file:line, importing module, imported module)`` for each import of the package
    ``root`` names (``pytest_modelprof``) made inside a function of a module under ``root``;
    files whose path relative to ``root`` is in ``skip`` are left out."""
    package = root.name
    found = []
    for path in sorted(root.rglob("*.py")):
        relative = path.relative_to(root).as_posix()
        if relative in skip:
            continue
        name = _module_name(path, root)
        tree = ast.parse(path.read_text(encoding="utf-8"))
        inside: dict[int, ast.Import | ast.ImportFrom] = {}
        for function in ast.walk(tree):
            if isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
                for node in ast.walk(function):
                    if isinstance(node, (ast.Import, ast.ImportFrom)):
                        inside[id(node)] = node  # once, however deeply the functions nest
        for node in sorted(inside.values(), key=lambda n: n.lineno):
            for target in _imported(node, name, path.name == "__init__.py"):
                if target == package or target.startswith(package + "."):
                    found.append((f"{package}/{relative}:{node.lineno}", name, target))
    return found


def unallowed(found: list[tuple[str, str, str]], allowed: dict[tuple[str, str], str]) -> list[str]:
    """The in-function imports no entry of ``allowed`` covers, as ``file:line: a -> b``."""
    return [f"{where}: {a} -> {b}" for where, a, b in found if (a, b) not in allowed]


def stale(found: list[tuple[str, str, str]], allowed: dict[tuple[str, str], str]) -> list[str]:
    """The entries of ``allowed`` that match no in-function import any more."""
    pairs = {(a, b) for _, a, b in found}
    return [f"{a} -> {b}" for a, b in sorted(allowed) if (a, b) not in pairs]


def test_our_modules_are_imported_at_the_top() -> None:
    # Move a new in-function import to the top of its module; list it in ALLOWED only when
    # that would load torch, pydantic or jinja2 where they must not be, with the reason.
    assert unallowed(in_function_imports(PACKAGE), ALLOWED) == []


def test_the_allowlist_has_no_stale_entries() -> None:
    assert stale(in_function_imports(PACKAGE), ALLOWED) == []


def test_every_allowed_import_says_why() -> None:
    assert set(ALLOWED.values()) <= {TORCH, LIGHT, LAZY, SERVER}


def test_the_scan_finds_a_planted_in_function_import(tmp_path: Path) -> None:
    # The check itself can fail: an import of our own module inside a function (a method, a
    # nested function, a relative one) is found; top-level, type-only and third-party ones
    # are not, and a skipped file is not read.
    root = tmp_path / "pytest_modelprof"
    (root / "gate").mkdir(parents=True)
    (root / "__init__.py").write_text("")
    (root / "gate" / "__init__.py").write_text("")
    (root / "gate" / "judge.py").write_text(
        "from typing import TYPE_CHECKING\n"
        "from pytest_modelprof.errors import ModelprofError\n"
        "if TYPE_CHECKING:\n"
        "    from pytest_modelprof.schema import ModelProfile\n"
        "def judge():\n"
        "    import json\n"
        "    from pytest_modelprof.units import format_count\n"
        "    def inner():\n"
        "        from . import settings\n"
        "class Judge:\n"
        "    def run(self):\n"
        "        import pytest_modelprof.profile\n"
    )
    (root / "gate" / "split.py").write_text("def f():\n    from pytest_modelprof import units\n")
    found = in_function_imports(root, frozenset({"gate/split.py"}))
    assert found == [
        (
            "pytest_modelprof/gate/judge.py:7",
            "pytest_modelprof.gate.judge",
            "pytest_modelprof.units",
        ),
        (
            "pytest_modelprof/gate/judge.py:9",
            "pytest_modelprof.gate.judge",
            "pytest_modelprof.gate",
        ),
        (
            "pytest_modelprof/gate/judge.py:12",
            "pytest_modelprof.gate.judge",
            "pytest_modelprof.profile",
        ),
    ]
    allowed = {("pytest_modelprof.gate.judge", "pytest_modelprof.profile"): TORCH}
    assert unallowed(found, allowed) == [
        "pytest_modelprof/gate/judge.py:7: pytest_modelprof.gate.judge -> pytest_modelprof.units",
        "pytest_modelprof/gate/judge.py:9: pytest_modelprof.gate.judge -> pytest_modelprof.gate",
    ]
    # An entry whose import moved to the top is stale, and fails.
    allowed[("pytest_modelprof.gate.judge", "pytest_modelprof.machines")] = LIGHT
    assert stale(found, allowed) == ["pytest_modelprof.gate.judge -> pytest_modelprof.machines"]
