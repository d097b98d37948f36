"""The package's layout holds: no import cycles (lazy imports included), no module over about
500 lines unless the exception table says why it is one concept.

Import-linter would need a config and a tool in CI; the graph is small enough to walk here, and
this version also sees imports inside functions (the lazy ones that used to hide a cycle) and a
module named by a string (``importlib.import_module("pytest_modelprof.profile")``, a
``sys.modules`` lookup). An object named by an import string (``"pytest_modelprof.x:y"``) is
refused outright: it hides a dependency the walk cannot place.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[3] / "pytest_modelprof"
MAX_LINES = 520  # "about 500": a module past this wants splitting along what it does
#: A module that is one concept and longer than :data:`MAX_LINES`: its path under the package ->
#: (its own cap, one line on why it is one concept). A line count is a smell detector, not a
#: design: an entry here beats splitting a concept in two. An entry whose module is back under
#: the default cap is stale (:func:`stale_line_caps`).
LONGER_MODULES: dict[str, tuple[int, str]] = {}


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imports(path: Path, name: str, known: set[str], *, type_only: bool = False) -> set[str]:
    """Every module of the package this module imports at run time (lazily or not).

    ``type_only``: also the imports under ``if TYPE_CHECKING:``.
    """
    tree = ast.parse(path.read_text(encoding="utf-8"))
    skip: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and _is_type_checking(node) and not type_only:
            skip.update(id(n) for stmt in node.body for n in ast.walk(stmt))
    out: set[str] = set()
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names if a.name in known)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                base = f"{parent}.{base}" if base else parent
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                if sub in known:
                    out.add(sub)
                elif base in known:
                    out.add(base)
    out.update(_named_modules(tree, known, skip) - NOT_IMPORTS.get(name, set()))
    out.discard(name)
    return out


#: Strings that spell a module's name without importing it: module -> such names.
NOT_IMPORTS = {
    # The entry-point group users register models under (importlib.metadata), not the module.
    "pytest_modelprof.models._registry": {"pytest_modelprof.models"},
}


def _named_modules(tree: ast.AST, known: set[str], skip: set[int]) -> set[str]:
    """The package's modules a string names whole (imported by name at run time)."""
    return {
        node.value
        for node in ast.walk(tree)
        if id(node) not in skip
        and isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and node.value in known
    }


#: ``"pytest_modelprof.gate.collect:latency_evidence"``: an object named by its import path.
IMPORT_STRING = re.compile(r"\bpytest_modelprof(?:\.[A-Za-z_]\w*)*:[A-Za-z_]\w*")


def import_strings(root: Path) -> list[str]:
    """``file:line: "pytest_modelprof.x:y"`` for each string in the modules under ``root`` that
    names an object by import path (docstrings and comments included: a reader follows them)."""
    found = []
    for path in sorted(root.rglob("*.py")):
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            found += [
                f"{path.relative_to(root).as_posix()}:{number}: {hit}"
                for hit in IMPORT_STRING.findall(line)
            ]
    return found


def test_no_object_is_named_by_an_import_string() -> None:
    # A collector, a factory or a hook named "pytest_modelprof.pkg.module:function" is an
    # import the layering walk cannot see: the owner registers it instead.
    assert import_strings(PACKAGE) == []


def test_the_import_string_scan_finds_a_planted_one(tmp_path: Path) -> None:
    # The check itself can fail: a metric table naming its collector by string is caught, and
    # so is one in a docstring; a user's "pkg.module:factory" and a plain module name are not.
    (tmp_path / "metrics.py").write_text(
        '"""Rows name ``pytest_modelprof.llm.gate:measure``."""\n'
        'TIMING = Collector("timing", measure="pytest_modelprof.gate.collect:latency_evidence")\n'
        'HINT = "pass model=\'pkg.module:factory\'"\n'
        'LAZY = {"profile_model": "pytest_modelprof.profile"}\n'
    )
    assert import_strings(tmp_path) == [
        "metrics.py:1: pytest_modelprof.llm.gate:measure",
        "metrics.py:2: pytest_modelprof.gate.collect:latency_evidence",
    ]


def test_a_module_named_by_a_string_is_an_edge(tmp_path: Path) -> None:
    # importlib.import_module("pytest_modelprof.profile") depends on it as an import does.
    module = tmp_path / "lazy.py"
    module.write_text(
        'import importlib\n'
        'def get():\n'
        '    return importlib.import_module("pytest_modelprof.profile")\n'
    )
    known = {"pytest_modelprof.profile", "pytest_modelprof.lazy"}
    assert _imports(module, "pytest_modelprof.lazy", known) == {"pytest_modelprof.profile"}


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found: list[list[str]] = []
    counter = [0]

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    known = set(modules)
    # A package's __init__ that only re-exports is fine to import; edges *into* a package's
    # own submodules from its __init__ are the re-exports, not a design dependency.
    return {name: _imports(path, name, known) for name, path in modules.items()}


def _room(name: str) -> str:
    return name.rpartition(".")[0]


def _room_graph() -> dict[str, set[str]]:
    """Imports between modules of one package (room), type-only ones included."""
    modules = _modules()
    known = set(modules)
    return {
        name: {m for m in _imports(path, name, known, type_only=True) if _room(m) == _room(name)}
        for name, path in modules.items()
    }


def test_no_import_cycles() -> None:
    cycles = _cycles(_graph())
    assert cycles == [], f"import cycles: {cycles}"


def test_no_import_cycles_inside_a_room() -> None:
    # Inside one package a name imported for annotations only (``if TYPE_CHECKING:``) still
    # makes a circle a reader has to follow: each pair of modules depends one way.
    cycles = _cycles(_room_graph())
    assert cycles == [], f"import cycles inside a package (type-only imports included): {cycles}"


def _folder(name: str) -> str:
    """``pytest_modelprof.baseline.compare`` -> ``baseline``; a top-level module is its own."""
    parts = name.split(".")
    return parts[1] if len(parts) > 1 else parts[0]


def _folder_graph() -> dict[str, set[str]]:
    """Imports between the package's folders (and top-level modules), lazy ones included."""
    out: dict[str, set[str]] = {}
    for name, targets in _graph().items():
        edges = out.setdefault(_folder(name), set())
        edges.update(_folder(t) for t in targets if _folder(t) != _folder(name))
    return out


def _folder_loops(graph: dict[str, set[str]]) -> list[str]:
    """Each folder loop, with one import per step that closes it (the modules to look at)."""
    modules = _graph()
    loops = []
    for cycle in _cycles(graph):
        steps = []
        for a in cycle:
            for b in sorted(graph[a] & set(cycle)):
                found = next(
                    f"{m} -> {t}"
                    for m, ts in sorted(modules.items())
                    for t in sorted(ts)
                    if _folder(m) == a and _folder(t) == b
                )
                steps.append(found)
        loops.append(f"{' <-> '.join(cycle)} ({'; '.join(steps)})")
    return loops


def test_no_import_loops_between_folders() -> None:
    # Layers point down: when baseline/ imports compile/, compile/ must not import baseline/,
    # even through a module that is itself no part of a module-level cycle.
    loops = _folder_loops(_folder_graph())
    assert loops == [], f"folders that import each other: {loops}"


def test_the_walker_finds_a_cycle() -> None:
    # The check itself can fail: a two-module circle is found.
    assert _cycles({"a": {"b"}, "b": {"a"}, "c": {"a"}}) == [["a", "b"]]


def test_modules_fall_into_their_folders() -> None:
    assert _folder("pytest_modelprof.baseline.compare") == "baseline"
    assert _folder("pytest_modelprof.compile") == "compile"
    assert _folder("pytest_modelprof.schema") == "schema"
    # Two modules of two folders that import each other are one folder loop.
    modules = {"pytest_modelprof.baseline.document": {"pytest_modelprof.compile.analyze"},
               "pytest_modelprof.compile.gate": {"pytest_modelprof.baseline.compare"}}
    folders = {_folder(m): {_folder(t) for t in ts} for m, ts in modules.items()}
    assert _cycles(folders) == [["baseline", "compile"]]


def _line_count(path: Path) -> int:
    return len(path.read_text(encoding="utf-8").splitlines())


def line_cap(relative: str, longer: dict[str, tuple[int, str]]) -> int:
    """The most lines the module at ``relative`` (``gate/judge.py``) may have."""
    return longer[relative][0] if relative in longer else MAX_LINES


def stale_line_caps(root: Path, longer: dict[str, tuple[int, str]]) -> list[str]:
    """Each entry of ``longer`` that no longer earns its place: the module is gone, is back
    under :data:`MAX_LINES`, or the entry's cap is no raise or gives no reason."""
    stale = []
    for relative, (cap, why) in sorted(longer.items()):
        path = root / relative
        if not path.is_file():
            stale.append(f"{relative}: no such module")
        elif _line_count(path) <= MAX_LINES:
            stale.append(f"{relative}: {_line_count(path)} lines, under the default cap")
        elif cap <= MAX_LINES or not why.strip():
            stale.append(f"{relative}: a cap of {cap} with reason {why!r}")
    return stale


@pytest.mark.parametrize("path", sorted(PACKAGE.rglob("*.py")), ids=lambda p: p.name)
def test_no_module_over_about_500_lines(path: Path) -> None:
    relative = path.relative_to(PACKAGE).as_posix()
    lines = _line_count(path)
    cap = line_cap(relative, LONGER_MODULES)
    assert lines <= cap, f"{path.relative_to(PACKAGE.parent)} has {lines} lines (cap {cap})"


def test_no_line_cap_exception_is_stale() -> None:
    assert stale_line_caps(PACKAGE, LONGER_MODULES) == []


def test_the_line_cap_table_finds_a_stale_exception(tmp_path: Path) -> None:
    # The check itself can fail: a module split below the default cap keeps no exception, a
    # removed module neither, and an exception must raise the cap and say why.
    (tmp_path / "short.py").write_text("x = 1\n" * 10)
    (tmp_path / "long.py").write_text("x = 1\n" * (MAX_LINES + 30))
    longer = {
        "short.py": (600, "one concept"),
        "gone.py": (600, "one concept"),
        "long.py": (600, "one concept: the judge's rows"),
    }
    assert stale_line_caps(tmp_path, longer) == [
        "gone.py: no such module",
        "short.py: 10 lines, under the default cap",
    ]
    unexplained = {"long.py": (600, " ")}
    assert stale_line_caps(tmp_path, unexplained) == ["long.py: a cap of 600 with reason ' '"]
    assert line_cap("long.py", longer) == 600 and line_cap("other.py", longer) == MAX_LINES


def namespace_folders(root: Path) -> list[str]:
    """Folders under ``root`` holding Python modules but no ``__init__.py``.

    Such a folder imports as a namespace package: it has no docstring, mypy and the layering
    walk name its modules differently, and a second folder of that name elsewhere on the path
    silently merges into it.
    """
    folders = {p.parent for p in root.rglob("*.py")}
    return sorted(
        f.relative_to(root).as_posix() for f in folders if not (f / "__init__.py").is_file()
    )


def test_every_folder_is_a_regular_package() -> None:
    assert namespace_folders(PACKAGE) == []


def test_the_package_scan_finds_a_folder_without_init(tmp_path: Path) -> None:
    # The check itself can fail: a folder of modules without __init__.py is named.
    (tmp_path / "regular").mkdir()
    (tmp_path / "regular" / "__init__.py").write_text("")
    (tmp_path / "regular" / "loose").mkdir()
    (tmp_path / "regular" / "loose" / "m.py").write_text("")
    (tmp_path / "data").mkdir()  # no modules: not a package at all
    (tmp_path / "data" / "x.json").write_text("{}")
    assert namespace_folders(tmp_path) == ["regular/loose"]


def test_the_gate_and_the_cli_are_packages() -> None:
    for package in ("gate", "cli", "exports", "report", "results", "baseline", "capture", "costs"):
        assert (PACKAGE / package / "__init__.py").is_file(), package
    loose = sorted(p.name for p in PACKAGE.glob("*.py"))
    for moved in ("gate.py", "results.py", "settings.py", "sweep.py", "fvcore_compare.py",
                  "graph_export.py", "export.py", "cli.py"):
        assert moved not in loose
    gate = sorted(p.name for p in (PACKAGE / "gate").glob("*.py"))
    for moved in ("record.py", "results.py", "summary.py"):  # now in results/ and report/
        assert moved not in gate


def _imports_of(prefix: str) -> dict[str, set[str]]:
    """The run-time imports (lazy ones included) of every module named ``prefix`` or under it."""
    return {
        name: targets
        for name, targets in _graph().items()
        if name == prefix or name.startswith(prefix + ".")
    }


def _reaching(prefixes: tuple[str, ...], targets: tuple[str, ...]) -> list[str]:
    found = []
    for prefix in prefixes:
        for name, imported in sorted(_imports_of(prefix).items()):
            found += [
                f"{name} -> {t}"
                for t in sorted(imported)
                if any(t == x or t.startswith(x + ".") for x in targets)
            ]
    return found


def test_the_compile_package_measures_and_judges_nothing() -> None:
    # Compile rows are built by the judge (baseline.compile_rows, called from gate.judge), not
    # rewritten by the compile package after it: the measuring side builds no check row.
    rows = ("pytest_modelprof.baseline.check", "pytest_modelprof.baseline.compare",
            "pytest_modelprof.gate")
    assert _reaching(("pytest_modelprof.compile",), rows) == []


def test_the_schema_and_the_baseline_do_not_import_the_compile_package() -> None:
    # The compile health record is a torch-free leaf beside schema.py.
    below = ("pytest_modelprof.schema", "pytest_modelprof.baseline")
    assert _reaching(below, ("pytest_modelprof.compile",)) == []
    leaf = "pytest_modelprof.compile_health"
    assert _imports_of(leaf)[leaf] == set()


def test_nothing_below_the_engine_imports_it() -> None:
    # profile.py runs the capture and the analyses: what it builds on never reaches back up.
    below = (
        "pytest_modelprof.schema",
        "pytest_modelprof.analysis",
        "pytest_modelprof.capture",
        "pytest_modelprof.compile",
    )
    assert _reaching(below, ("pytest_modelprof.profile",)) == []


def _reaching_typed(prefixes: tuple[str, ...], targets: tuple[str, ...]) -> list[str]:
    """Like :func:`_reaching`, with the imports under ``if TYPE_CHECKING:`` too."""
    modules = _modules()
    known = set(modules)
    found = []
    for name, path in sorted(modules.items()):
        if not any(name == p or name.startswith(p + ".") for p in prefixes):
            continue
        found += [
            f"{name} -> {t}"
            for t in sorted(_imports(path, name, known, type_only=True))
            if any(t == x or t.startswith(x + ".") for x in targets)
        ]
    return found


def test_the_results_sit_below_the_gate_and_the_reports() -> None:
    # The record, the results document and merging live in results/: the gate makes them, the
    # reports read them, and neither the reports nor the results reach up into the gate (not
    # even for a type), nor the results into the renderers.
    gate, report = "pytest_modelprof.gate", "pytest_modelprof.report"
    assert _reaching_typed(("pytest_modelprof.report",), (gate,)) == []
    assert _reaching_typed(("pytest_modelprof.results",), (gate, report)) == []
    assert _reaching(("pytest_modelprof.gate",), (report,)) == []


def test_the_upward_import_check_finds_one(tmp_path: Path) -> None:
    # The check itself can fail: a type-only import of the gate in a report module is named.
    module = tmp_path / "view.py"
    module.write_text(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n"
        "    from pytest_modelprof.gate.judge import judge\n"
    )
    known = {"pytest_modelprof.gate.judge"}
    assert _imports(module, "pytest_modelprof.report.view", known, type_only=True) == known
    assert _imports(module, "pytest_modelprof.report.view", known) == set()
