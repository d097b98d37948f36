"""Stale baselines: only those we know no test needs."""

from __future__ import annotations

import json
from pathlib import Path

from pytest_modelprof.baseline.stale import find_stale, parent_nodeid, prune


def put(root: Path, rel: str, test: str) -> Path:
    path = root / "baselines" / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"test": test}))
    return path


def test_find_stale(tmp_path: Path) -> None:
    (tmp_path / "tests").mkdir()
    for name in ("test_a.py", "test_b.py"):
        (tmp_path / "tests" / name).write_text("")
    bdir = tmp_path / "baselines"
    used = put(tmp_path, "tests/test_a/test_used.json", "tests/test_a.py::test_used")
    gone_name = put(tmp_path, "tests/test_a/test_used@old.json", "tests/test_a.py::test_used")
    renamed = put(tmp_path, "tests/test_a/test_renamed.json", "tests/test_a.py::test_renamed")
    deselected = put(tmp_path, "tests/test_a/test_desel.json", "tests/test_a.py::test_desel")
    other_module = put(tmp_path, "tests/test_b/test_x.json", "tests/test_b.py::test_x")
    deleted_module = put(tmp_path, "tests/test_gone/test_x.json", "tests/test_gone.py::test_x")
    corrupt = bdir / "tests" / "corrupt.json"
    corrupt.write_text("{nope")
    in_class = put(tmp_path, "tests/test_b/TestB/test_y.json", "tests/test_b.py::TestB::test_y")
    stale = find_stale(
        bdir,
        used={used.relative_to(bdir).as_posix()},
        # test_a.py was collected whole (test_desel then deselected); test_b.py was entered
        # through a node id of another class, so TestB was never expanded.
        expanded={
            "tests/test_a.py": {"tests/test_a.py::test_used", "tests/test_a.py::test_desel"},
            "tests/test_b.py": {
                "tests/test_b.py::test_x",
                "tests/test_b.py::TestA",
                "tests/test_b.py::TestB",
            },
        },
        completed={"tests/test_a.py::test_used"},
        rootdir=tmp_path,
    )
    assert sorted(stale) == sorted([gone_name, renamed, deleted_module])
    assert deselected not in stale and other_module not in stale and corrupt not in stale
    assert in_class not in stale
    prune(bdir, stale)
    assert not deleted_module.parent.exists()  # emptied directories go too
    assert used.exists() and other_module.exists() and not gone_name.exists()


def test_no_directory(tmp_path: Path) -> None:
    nothing = find_stale(tmp_path / "x", used=set(), expanded={}, completed=set(), rootdir=tmp_path)
    assert nothing == []


def test_parent_nodeid() -> None:
    assert parent_nodeid("d/t.py::C::f[x::y]") == "d/t.py::C"
    assert parent_nodeid("d/t.py::C") == "d/t.py"
    assert parent_nodeid("d/t.py") == "d"
    assert parent_nodeid("t.py") == ""
