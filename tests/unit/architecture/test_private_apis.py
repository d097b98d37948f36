"""Private torch and pytest APIs are used in one module, ``_compat.py``, each behind a wrapper
with a smoke test; a torch release that moves one then breaks one place, and a test names it."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[3] / "pytest_modelprof"
COMPAT = PACKAGE / "_compat.py"
# Private attributes of torch objects we read: a view's base, a storage's C pointer, an op's
# schema and qualified name.
PRIVATE_ATTRIBUTES = frozenset({"_base", "_cdata", "_schema", "_qualified_op_name"})


def _private_module(name: str) -> bool:
    """``torch._dynamo``, ``torch.utils._python_dispatch``, ``_pytest.nodes``."""
    top, *rest = name.split(".")
    return top == "_pytest" or (top == "torch" and any(p.startswith("_") for p in rest))


def private_uses(source: str) -> list[str]:
    """``"line N: what"`` for each private torch or pytest API ``source`` reaches."""
    found: list[str] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Attribute) and node.attr in PRIVATE_ATTRIBUTES:
            found.append(f"line {node.lineno}: .{node.attr}")
        elif isinstance(node, ast.Import):
            names = [a.name for a in node.names if _private_module(a.name)]
            found.extend(f"line {node.lineno}: import {name}" for name in names)
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            if _private_module(node.module):
                found.append(f"line {node.lineno}: from {node.module} import ...")
    return found


def test_private_apis_only_in_compat() -> None:
    offenders = {
        path.relative_to(PACKAGE.parent).as_posix(): uses
        for path in sorted(PACKAGE.rglob("*.py"))
        if path != COMPAT and (uses := private_uses(path.read_text(encoding="utf-8")))
    }
    assert offenders == {}, (
        "private torch/pytest APIs outside _compat.py; wrap each in a _compat function with a "
        f"smoke test (tests/unit/capture/test_capture.py): {offenders}"
    )


def test_the_scan_finds_private_uses() -> None:
    # The check itself can fail: each kind of private use is found, public ones are not.
    source = (
        "import torch._dynamo\n"
        "from torch.utils._python_dispatch import TorchDispatchMode\n"
        "from _pytest.nodes import Item\n"
        "from torch.utils.hooks import RemovableHandle\n"
        "base = t._base\n"
        "shape = t.shape\n"
    )
    assert private_uses(source) == [
        "line 1: import torch._dynamo",
        "line 2: from torch.utils._python_dispatch import ...",
        "line 3: from _pytest.nodes import ...",
        "line 5: ._base",
    ]


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
