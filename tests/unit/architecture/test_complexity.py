"""No function is hard to follow: McCabe complexity at most 15, and few above 10.

The count is ruff's C901 rule (``ruff check --select C901 --config
'lint.mccabe.max-complexity=10' pytest_modelprof`` lists the same functions), computed here with
``ast`` so the test needs no tool and no ruff version can move the numbers.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Sequence
from functools import cache
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[3] / "pytest_modelprof"
MAX_COMPLEXITY = 15  # no function above this
OVER_10_CEILING = 9  # "fewer than 10" functions above 10: split one before adding another
RUFF = "ruff check --select C901 --config 'lint.mccabe.max-complexity=10' pytest_modelprof"

_Function = ast.FunctionDef | ast.AsyncFunctionDef
_TRY = (ast.Try, getattr(ast, "TryStar", ast.Try))  # ``except*``: Python 3.11+


def _catch_all(case: ast.match_case) -> bool:
    """``case _:`` (no guard) at the end adds no branch: it is the match's ``else``."""
    pattern = case.pattern
    return isinstance(pattern, ast.MatchAs) and pattern.pattern is None and case.guard is None


def _count(body: Sequence[ast.stmt]) -> int:
    """Decision points of a block, the way ruff's (and mccabe's) C901 counts them."""
    n = 0
    for stmt in body:
        if isinstance(stmt, ast.If):
            n += 1 + _count(stmt.body)
            # An ``elif`` is an If alone in the orelse; a plain ``else`` adds no branch.
            n += _count(stmt.orelse)
        elif isinstance(stmt, (ast.For, ast.AsyncFor, ast.While)):
            n += 1 + _count(stmt.body) + _count(stmt.orelse)
        elif isinstance(stmt, (ast.With, ast.AsyncWith)):
            n += _count(stmt.body)
        elif isinstance(stmt, _TRY):
            n += _count(stmt.body) + _count(stmt.finalbody)
            n += (1 if stmt.orelse else 0) + _count(stmt.orelse)
            n += sum(1 + _count(h.body) for h in stmt.handlers)
        elif isinstance(stmt, ast.Match):
            n += sum(1 + _count(case.body) for case in stmt.cases)
            n -= 1 if stmt.cases and _catch_all(stmt.cases[-1]) else 0
        elif isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            n += 1 + _count(stmt.body)  # a nested function's branches are its parent's too
        elif isinstance(stmt, ast.ClassDef):
            n += _count(stmt.body)
    return n


def complexity(function: _Function) -> int:
    """McCabe complexity of one function: 1 + its decision points."""
    return 1 + _count(function.body)


def _functions(tree: ast.AST) -> Iterator[_Function]:
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield node


@cache
def _all() -> list[tuple[str, int]]:
    """``("path:line name", complexity)`` of every function of the package."""
    out: list[tuple[str, int]] = []
    for path in sorted(PACKAGE.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        where = path.relative_to(PACKAGE.parent).as_posix()
        out.extend((f"{where}:{f.lineno} {f.name}", complexity(f)) for f in _functions(tree))
    return out


def test_no_function_over_complexity_15() -> None:
    over = [f"{name} ({c})" for name, c in _all() if c > MAX_COMPLEXITY]
    assert over == [], (
        f"functions over McCabe complexity {MAX_COMPLEXITY}; split them into named helpers "
        f"(list them with: {RUFF}): {over}"
    )


def test_few_functions_over_complexity_10() -> None:
    over = sorted(f"{name} ({c})" for name, c in _all() if c > 10)
    assert len(over) <= OVER_10_CEILING, (
        f"{len(over)} functions over McCabe complexity 10, at most {OVER_10_CEILING} allowed; "
        f"split one (list them with: {RUFF}):\n" + "\n".join(over)
    )


def test_the_count_is_mccabes() -> None:
    # The check itself can fail: a function with every kind of branch, counted by hand.
    source = """
def f(x):
    if x:            # 1
        pass
    elif x > 1:      # 2
        pass
    else:
        pass
    for _ in x:      # 3
        while x:     # 4
            break
    try:
        pass
    except ValueError:  # 5
        pass
    except Exception:   # 6
        pass
    else:               # 7
        pass
    with open(x):
        if x:           # 8
            pass
    def inner():        # 9
        return [y for y in x if y] and x or x  # comprehensions and and/or: not counted
    match x:
        case 1:         # 10
            pass
        case 2 if x:    # 11
            pass
        case _:         # the match's else: not counted
            pass
"""
    (function,) = [n for n in ast.parse(source).body if isinstance(n, ast.FunctionDef)]
    assert complexity(function) == 12
