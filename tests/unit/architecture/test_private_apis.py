"""Private torch and pytest APIs are used in one module, ``_compat.py``, each behind a wrapper
with a smoke test; a torch release that moves one then breaks one place, and a test names it."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
PACKAGE = ROOT / "pytest_modelprof"
COMPAT = PACKAGE / "_compat.py"
# Private attributes of torch objects we read: a view's base, a storage's C pointer, an op's
# schema and qualified name.
PRIVATE_ATTRIBUTES = frozenset({"_base", "_cdata", "_schema", "_qualified_op_name"})
# nn.Module's own registries (with the None entries its public iterators skip). Only another
# object's are flagged: a class of ours may keep an attribute of the same name on ``self``.
MODULE_REGISTRIES = frozenset({"_parameters", "_buffers", "_modules"})
# Private uses outside _compat.py that cannot go behind it, "path: what" with the reason.
ALLOWED = {
    # The suite's own set-up patches pytester's sys.modules snapshot, which pytest does not
    # expose; it is test infrastructure, not the package, and pytest's changes break it loudly.
    "tests/conftest.py: from _pytest import ...": "pytester keeps the heavy libraries loaded",
}


def _private_module(name: str) -> bool:
    """``torch._dynamo``, ``torch.utils._python_dispatch``, ``_pytest.nodes``."""
    top, *rest = name.split(".")
    return top == "_pytest" or (top == "torch" and any(p.startswith("_") for p in rest))


def _private_attribute(node: ast.Attribute) -> bool:
    if node.attr in PRIVATE_ATTRIBUTES:
        return True
    owner = node.value
    return node.attr in MODULE_REGISTRIES and not (
        isinstance(owner, ast.Name) and owner.id == "self"
    )


def private_uses(source: str) -> list[str]:
    """``"line N: what"`` for each private torch or pytest API ``source`` reaches."""
    found: list[str] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Attribute) and _private_attribute(node):
            found.append(f"line {node.lineno}: .{node.attr}")
        elif isinstance(node, ast.Import):
            names = [a.name for a in node.names if _private_module(a.name)]
            found.extend(f"line {node.lineno}: import {name}" for name in names)
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            if _private_module(node.module):
                found.append(f"line {node.lineno}: from {node.module} import ...")
    return found


def offenders(paths: list[Path], root: Path) -> list[str]:
    """``"path: what"`` for each private use in ``paths`` (their line numbers dropped)."""
    return [
        f"{path.relative_to(root).as_posix()}: {use.partition(': ')[2]}"
        for path in paths
        for use in private_uses(path.read_text(encoding="utf-8"))
    ]


def _scanned() -> list[Path]:
    """The package, its tests and its benchmarks: every file but _compat.py."""
    paths = [*PACKAGE.rglob("*.py"), *(ROOT / "tests").rglob("*.py")]
    paths += (ROOT / "benchmarks").rglob("*.py")
    return sorted(p for p in paths if p != COMPAT)


def test_private_apis_only_in_compat() -> None:
    found = [use for use in offenders(_scanned(), ROOT) if use not in ALLOWED]
    assert found == [], (
        "private torch/pytest APIs outside _compat.py; wrap each in a _compat function with a "
        f"smoke test (tests/unit/capture/test_capture.py): {found}"
    )


def test_the_allowlist_names_only_private_uses_still_there() -> None:
    assert sorted(set(ALLOWED) - set(offenders(_scanned(), ROOT))) == [], "take these off"


def test_the_scan_finds_private_uses() -> None:
    # The check itself can fail: each kind of private use is found, public ones are not.
    source = (
        "import torch._dynamo\n"
        "from torch.utils._python_dispatch import TorchDispatchMode\n"
        "from _pytest.nodes import Item\n"
        "from torch.utils.hooks import RemovableHandle\n"
        "base = t._base\n"
        "shape = t.shape\n"
        "params = module._parameters\n"
        "self._buffers = []\n"
    )
    assert private_uses(source) == [
        "line 1: import torch._dynamo",
        "line 2: from torch.utils._python_dispatch import ...",
        "line 3: from _pytest.nodes import ...",
        "line 5: ._base",
        "line 7: ._parameters",
    ]


def test_the_scan_reads_test_files_too(tmp_path: Path) -> None:
    # A planted private use in a test file is named by path, without its line number.
    (tmp_path / "tests").mkdir()
    planted = tmp_path / "tests" / "test_x.py"
    planted.write_text("import torch\nchildren = torch.nn.Linear(1, 1)._modules\n")
    assert offenders([planted], tmp_path) == ["tests/test_x.py: ._modules"]


def tracer_privates(source: str) -> list[str]:
    """``"line N: tracer._x"`` where ``source`` reaches a private member of a tracer."""
    found: list[str] = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Attribute) or not node.attr.startswith("_"):
            continue
        owner = node.value
        name = owner.attr if isinstance(owner, ast.Attribute) else getattr(owner, "id", "")
        if name == "tracer":
            found.append(f"line {node.lineno}: tracer.{node.attr}")
    return found


def test_the_tracer_is_used_through_its_public_methods() -> None:
    # RecurrentOnMeta records its one op with Tracer.record_op, as the dispatch hook does.
    offenders = {
        path.name: uses
        for path in sorted(PACKAGE.rglob("*.py"))
        if path.name != "tracer.py" and (uses := tracer_privates(path.read_text("utf-8")))
    }
    assert offenders == {}, f"private members of the tracer used outside tracer.py: {offenders}"
    assert tracer_privates("self.tracer._record(f)\ntracer.paused = True\n") == [
        "line 1: tracer._record"
    ]
