"""The public API has an edge: what a user imports comes from ``pytest_modelprof`` itself.

The documentation imports only top-level names, the API reference documents them under those
names, the ``modelprof`` fixture has a type to annotate with, and every error a user can see is
a ``ModelprofError`` subclass whose suggestion comes from the one helper,
``errors.did_you_mean``.
"""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import pytest_modelprof

ROOT = Path(__file__).resolve().parents[3]
PACKAGE = ROOT / "pytest_modelprof"
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
_DEEP_IMPORT = re.compile(
    r"\b(?:from\s+pytest_modelprof\.\w[\w.]*\s+import|import\s+pytest_modelprof\.\w)"
)
_TOP_IMPORT = re.compile(r"from\s+pytest_modelprof\s+import\s+(?:\(([^)]*)\)|([\w ,]+))")


def deep_imports(text: str) -> list[str]:
    """``"line N: ..."`` for each import of a module below ``pytest_modelprof`` in ``text``."""
    return [
        f"line {n}: {line.strip()}"
        for n, line in enumerate(text.splitlines(), 1)
        if _DEEP_IMPORT.search(line)
    ]


def test_the_documentation_imports_only_top_level_names() -> None:
    offenders = {
        p.relative_to(ROOT).as_posix(): found
        for p in DOCS
        if (found := deep_imports(p.read_text(encoding="utf-8")))
    }
    assert offenders == {}, f"import these from pytest_modelprof itself: {offenders}"


def test_the_scan_finds_a_deep_import() -> None:
    # The check itself can fail: a deeper module is named, the top level and prose are not.
    text = (
        "from pytest_modelprof import profile_model\n"
        "from pytest_modelprof.llm import profile_llm\n"
        "import pytest_modelprof.fit\n"
        "the plugin (`pytest_modelprof.plugin`) wires\n"
    )
    assert deep_imports(text) == [
        "line 2: from pytest_modelprof.llm import profile_llm",
        "line 3: import pytest_modelprof.fit",
    ]


def test_every_name_the_documentation_imports_is_exported() -> None:
    names = {
        name.strip()
        for p in DOCS
        for groups in _TOP_IMPORT.findall(p.read_text(encoding="utf-8"))
        for name in "".join(groups).split(",")
        if name.strip()
    }
    assert names, "the documentation imports nothing from pytest_modelprof"
    assert sorted(names - set(pytest_modelprof.__all__)) == []


def test_the_api_reference_documents_top_level_names() -> None:
    text = (ROOT / "docs" / "reference" / "api.md").read_text(encoding="utf-8")
    documented = re.findall(r"^::: (\S+)", text, flags=re.M)
    # The hooks are functions a conftest.py defines, not names it imports: their module is shown.
    shown = [d for d in documented if d != "pytest_modelprof.hookspecs"]
    assert shown, "the API reference documents nothing"
    assert [d for d in shown if d.rpartition(".")[0] != "pytest_modelprof"] == []
    assert sorted({d.rpartition(".")[2] for d in shown} - set(pytest_modelprof.__all__)) == []


def test_every_top_level_name_loads_and_the_import_needs_no_torch() -> None:
    # Importing the package (as the plugin does) loads no torch; each name loads on first use.
    code = (
        "import sys, pytest_modelprof as p\n"
        "assert 'torch' not in sys.modules, 'import pytest_modelprof loaded torch'\n"
        "missing = [n for n in p.__all__ if getattr(p, n, None) is None]\n"
        "assert not missing, missing\n"
        "assert sorted(dir(p)) == sorted(set(dir(p))) and set(p.__all__) <= set(dir(p))\n"
    )
    env = dict(
        os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=False
    )
    assert done.returncode == 0, done.stderr[-2000:]


def test_the_fixture_is_an_instance_of_its_public_type(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_typed="""
        import pytest_modelprof
        from pytest_modelprof import Modelprof


        def test_typed(modelprof: Modelprof) -> None:
            assert isinstance(modelprof, pytest_modelprof.Modelprof)
        """
    )
    pytester.runpytest_subprocess().assert_outcomes(passed=1)


SAMPLE = """
from pytest_modelprof import ModelProfile, Modelprof


def test_resnet(modelprof: Modelprof) -> None:
    profile: ModelProfile = modelprof("resnet18", input_shape=(1, 3, 32, 32), name="backbone")
    total: int = profile.total_flops
    assert total > 0
"""


@pytest.mark.slow
def test_annotating_with_the_fixture_type_type_checks(tmp_path: Path) -> None:
    pytest.importorskip("mypy")
    (tmp_path / "test_good.py").write_text(SAMPLE)
    # A typo in a keyword is caught: the type is not Any.
    (tmp_path / "test_bad.py").write_text(SAMPLE.replace("input_shape=", "input_shap="))
    env = dict(
        os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])
    )
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--strict",
            "--follow-imports=silent",
            "--ignore-missing-imports",
            "--no-incremental",
            "--cache-dir",
            str(tmp_path / "cache"),
            "test_good.py",
            "test_bad.py",
        ],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        check=False,
        timeout=600,
    )
    errors = [ln for ln in done.stdout.splitlines() if ": error:" in ln]
    assert [ln.split(":")[0] for ln in errors] == ["test_bad.py"], done.stdout[-3000:]
    assert '"input_shap"' in errors[0]


# ---- errors: every one a user can see is a ModelprofError subclass ----

#: Builtin exceptions that a raise must not use for what a user did wrong.
BUILTINS = frozenset(
    {
        "ValueError",
        "TypeError",
        "RuntimeError",
        "LookupError",
        "KeyError",
        "IndexError",
        "Exception",
        "OSError",
        "NotImplementedError",
    }
)
#: ``"path: function: Exception"`` of the raises that are internal invariants or protocols,
#: each with its reason. Checked for stale entries.
ALLOWED = {
    # Mirrors the error torch's own kernel raises for a bad call; the capture reports it as the
    # model's (the model made the call), as it does for any kernel's error.
    "pytest_modelprof/_compat.py: _grouped_mm_rule.need: RuntimeError": "torch's kernel error",
    # Our own invariants: reached only by a bug of ours (the callers build what they check).
    "pytest_modelprof/analysis/grouping.py: topological: RuntimeError": "invariant",
    "pytest_modelprof/analysis/concurrency.py: _check: ValueError": "invariant",
    "pytest_modelprof/analysis/concurrency.py: critical_path: ValueError": "invariant",
    "pytest_modelprof/runtime/context.py: ProfilingContext.__enter__: RuntimeError": "invariant",
    # A command wording a shared option beyond what the table allows: a bug in a command's
    # definition, met by every run of that command's --help in the suite.
    "pytest_modelprof/cli/_common.py: add_option: TypeError": "invariant",
    # A formula's wrong return value, caught at once and raised as a FormulaError naming it.
    "pytest_modelprof/capture/ops.py: price: TypeError": "wrapped as FormulaError",
}


def plain_raises(source: str, where: str) -> list[str]:
    """``"where: function: Exception"`` of each ``raise Builtin(...)`` in ``source``."""
    found: list[str] = []

    def visit(node: ast.AST, scope: list[str]) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                visit(child, [*scope, child.name])
                continue
            if isinstance(child, ast.Raise) and child.exc is not None:
                exc = child.exc.func if isinstance(child.exc, ast.Call) else child.exc
                if isinstance(exc, ast.Name) and exc.id in BUILTINS:
                    found.append(f"{where}: {'.'.join(scope) or '<module>'}: {exc.id}")
            visit(child, scope)

    visit(ast.parse(source), [])
    return found


def _package_raises() -> list[str]:
    return [
        r
        for p in sorted(PACKAGE.rglob("*.py"))
        for r in plain_raises(p.read_text(encoding="utf-8"), p.relative_to(ROOT).as_posix())
    ]


def test_every_raised_error_is_a_modelprof_error() -> None:
    plain = sorted({r for r in _package_raises() if r not in ALLOWED})
    assert plain == [], (
        "raise a ModelprofError subclass (pytest_modelprof/errors.py) for what a user did "
        f"wrong, or allowlist an internal invariant with its reason: {plain}"
    )


def test_the_raise_allowlist_names_only_plain_raises() -> None:
    assert sorted(set(ALLOWED) - set(_package_raises())) == [], "take these off ALLOWED"


def test_the_scan_finds_a_plain_raise() -> None:
    source = (
        "def f(x):\n    raise ValueError(f'bad {x}')\n"
        "class C:\n    def g(self):\n        raise SettingsError('fine')\n"
        "    def h(self):\n        raise TypeError\n"
    )
    assert plain_raises(source, "m.py") == ["m.py: f: ValueError", "m.py: C.h: TypeError"]


def suggestion_makers(source: str) -> list[str]:
    """``"line N"`` of each use of difflib's matcher or hand-written "did you mean" text."""
    found: list[str] = []
    tree = ast.parse(source)
    docstrings = {id(n.value) for n in ast.walk(tree) if isinstance(n, ast.Expr)}
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr == "get_close_matches":
            found.append(f"line {node.lineno}: get_close_matches")
        elif isinstance(node, ast.alias) and node.name == "get_close_matches":
            found.append(f"line {node.lineno}: get_close_matches")
        elif (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and id(node) not in docstrings
            and "did you mean" in node.value.lower()
        ):
            found.append(f"line {node.lineno}: {node.value.strip()[:40]!r}")
    return found


#: Text that reads a suggestion rather than writing one, with the reason.
READS_SUGGESTIONS = {
    # The CLI adds the command list to an argparse error unless it already suggests a name.
    "pytest_modelprof/cli/__init__.py: 'did you mean'",
}


def test_one_did_you_mean() -> None:
    offenders = {
        rel: found
        for p in sorted(PACKAGE.rglob("*.py"))
        if (rel := p.relative_to(ROOT).as_posix()) != "pytest_modelprof/errors.py"
        and (
            found := [
                f
                for f in suggestion_makers(p.read_text(encoding="utf-8"))
                if f"{rel}: {f.partition(': ')[2]}" not in READS_SUGGESTIONS
            ]
        )
    }
    assert offenders == {}, f"use pytest_modelprof.errors.did_you_mean: {offenders}"


def test_the_scan_finds_a_hand_written_suggestion() -> None:
    source = (
        '"""Suggests: did you mean."""\n'
        "import difflib\n"
        "close = difflib.get_close_matches(w, known)\n"
        "hint = f'did you mean {close[0]}?'\n"
        "ok = did_you_mean(w, known)\n"
    )
    assert suggestion_makers(source) == [
        "line 3: get_close_matches",
        "line 4: 'did you mean'",
    ]


def test_did_you_mean_has_one_format() -> None:
    from pytest_modelprof.errors import did_you_mean

    assert did_you_mean("max_flop_delta", ["max_flops_delta", "max_params"]) == (
        "; did you mean 'max_flops_delta'?"
    )
    assert did_you_mean("resnet", ["resnet18", "resnet34", "resnet50"]) == (
        "; did you mean 'resnet50' or 'resnet34'?"
    )
    assert did_you_mean("zzz", ["max_flops_delta"]) == ""


# ---- internal modules: __all__ lists what the rest of the package imports ----


def _module_names() -> dict[str, Path]:
    out: dict[str, Path] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(ROOT).with_suffix("").parts
        out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return out


def imported_names(modules: dict[str, str]) -> dict[str, set[str]]:
    """For each module (dotted name -> source), the names other modules take from it:
    ``from m import n``, ``m.n`` after ``import m``, ``"m:n"`` and lazy tables ``{"n": "m"}``."""
    used: dict[str, set[str]] = {m: set() for m in modules}
    for name, source in modules.items():
        tree = ast.parse(source)
        is_package = any(m.startswith(name + ".") for m in modules)
        package = name if is_package else name.rpartition(".")[0]
        aliases: dict[str, str] = {}
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    up = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join([*up, *([base] if base else [])])
                for alias in node.names:
                    if f"{base}.{alias.name}" in modules:
                        aliases[alias.asname or alias.name] = f"{base}.{alias.name}"
                    elif base in modules and base != name:
                        used[base].add(alias.name)
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name in modules:
                        aliases[alias.asname or alias.name] = alias.name
            elif isinstance(node, ast.Constant) and isinstance(node.value, str):
                # "module:name", as a collector or an entry point names what it calls
                where, _, what = node.value.partition(":")
                if where in modules and what.isidentifier():
                    used[where].add(what)
            elif isinstance(node, ast.Dict):
                for key, value in zip(node.keys, node.values, strict=True):
                    if (
                        isinstance(key, ast.Constant)
                        and isinstance(value, ast.Constant)
                        and value.value in modules
                    ):
                        used[str(value.value)].add(str(key.value))
        for node in ast.walk(tree):
            if not isinstance(node, ast.Attribute):
                continue
            chain: list[str] = []
            current: ast.expr = node
            while isinstance(current, ast.Attribute):
                chain.insert(0, current.attr)
                current = current.value
            head = aliases.get(current.id) if isinstance(current, ast.Name) else None
            while head is not None and chain and f"{head}.{chain[0]}" in modules:
                head = f"{head}.{chain.pop(0)}"
            if head is not None and chain and head != name:
                used[head].add(chain[0])
    return used


def _defined(tree: ast.Module) -> set[str]:
    out: set[str] = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out.add(node.name)
        targets = node.targets if isinstance(node, ast.Assign) else []
        targets += [node.target] if isinstance(node, ast.AnnAssign) else []
        out.update(t.id for t in targets if isinstance(t, ast.Name))
    return out


def unimported_exports(modules: dict[str, str]) -> list[str]:
    """``"module: name"`` for each name a module (not a package) defines and lists in
    ``__all__`` that no other module imports: ``__all__`` of an internal module is its
    interface to the rest of the package, not a second public API."""
    used = imported_names(modules)
    packages = {m.rpartition(".")[0] for m in modules}
    out: list[str] = []
    for name, source in modules.items():
        if name in packages:
            continue
        tree = ast.parse(source)
        exported = [
            str(e.value)
            for node in tree.body
            if isinstance(node, (ast.Assign, ast.AnnAssign))
            and "__all__" in ast.unparse(node).split("=")[0]
            and isinstance(node.value, (ast.List, ast.Tuple))
            for e in node.value.elts
            if isinstance(e, ast.Constant)
        ]
        defined = _defined(tree)
        out += [f"{name}: {n}" for n in exported if n in defined and n not in used[name]]
    return out


def test_an_internal_modules_all_lists_what_the_package_imports_from_it() -> None:
    modules = {m: p.read_text(encoding="utf-8") for m, p in _module_names().items()}
    extra = unimported_exports(modules)
    assert extra == [], f"take these off __all__ (or import them from another module): {extra}"


def test_the_scan_finds_an_export_nobody_imports() -> None:
    modules = {
        "pkg": "",
        "pkg.a": '__all__ = ["used", "by_attr", "lazy", "named", "orphan"]\n'
        "def used(): ...\ndef by_attr(): ...\ndef lazy(): ...\ndef named(): ...\n"
        "def orphan(): ...\n",
        "pkg.b": "from pkg.a import used\nimport pkg.a as mod\nmod.by_attr()\n"
        'TABLE = {"lazy": "pkg.a"}\nHOOK = "pkg.a:named"\n',
    }
    assert unimported_exports(modules) == ["pkg.a: orphan"]
