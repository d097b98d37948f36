"""Baseline paths (safe for any node id, the same on every OS) and atomic writes."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path, PurePosixPath

import pytest

from pytest_modelprof.baseline.store import (
    BaselinePaths,
    baseline_relpath,
    iter_baseline_files,
    read_text,
    sanitize_component,
    write_atomic,
)
from pytest_modelprof.errors import BaselineError

SAFE = re.compile(r"^[A-Za-z0-9._\-\[\]=+,@]+$")
WINDOWS_RESERVED = {"con", "prn", "aux", "nul", *(f"com{i}" for i in range(1, 10))}


def posix(nodeid: str, name: str | None = None) -> str:
    return PurePosixPath(*baseline_relpath(nodeid, name).parts).as_posix()


def test_mirrors_the_test_module() -> None:
    assert posix("tests/test_zoo.py::test_resnet18") == "tests/test_zoo/test_resnet18.json"
    assert posix("tests/test_zoo.py::TestA::test_b[x-1]") == "tests/test_zoo/TestA/test_b[x-1].json"
    assert posix("test_m.py::test_fix", "backbone") == "test_m/test_fix@backbone.json"


@pytest.mark.parametrize(
    "param_id",
    [
        "../../etc/passwd",
        "a/b",
        "a\\b",
        "a::b",
        'c:<>"|?*',
        "CON",
        "nul.txt",
        "trailing. ",
        ".hidden",
        "..",
        "\u00fcnic\u00f8de-\U0001f600",
        "sp ace",
        "x" * 400,
        "tab\tnew\nline\x00",
    ],
)
def test_any_param_id_is_safe(param_id: str) -> None:
    rel = baseline_relpath(f"tests/test_x.py::test_y[{param_id}]")
    assert rel.parts[:2] == ("tests", "test_x")
    for part in rel.parts:
        assert SAFE.match(part), part
        assert part not in {".", ".."} and not part.startswith(".")
        assert part.split(".")[0].lower() not in WINDOWS_RESERVED
        assert len(part.encode()) <= 255
    assert len(rel.parts) == 3  # the id never creates directories


def test_lossy_names_get_distinct_hashes() -> None:
    ids = ["a/b", "a\\b", "a:b", "a_b", "a?b"]
    paths = {baseline_relpath(f"t.py::test[{i}]") for i in ids}
    assert len(paths) == len(ids)
    assert posix("t.py::test[a_b]") == "t/test[a_b].json"  # clean ids stay readable


def test_name_is_sanitised_too() -> None:
    assert "/" not in posix("t.py::test", "../x").split("/", 1)[1]
    assert baseline_relpath("t.py::test", "a@b") != baseline_relpath("t.py::test@a", "b")


def test_sanitize_is_stable() -> None:
    # the same on every OS and run: no randomness, no platform-dependent rules
    assert sanitize_component("a/b") == sanitize_component("a/b")
    assert sanitize_component("ok-name[1]") == "ok-name[1]"


def test_empty_nodeid_is_an_error() -> None:
    with pytest.raises(BaselineError):
        baseline_relpath("")


def test_write_atomic(tmp_path: Path) -> None:
    path = tmp_path / "deep" / "dir" / "b.json"
    assert write_atomic(path, "{}\n") is True
    assert path.read_bytes() == b"{}\n"
    mtime = os.stat(path).st_mtime_ns
    assert write_atomic(path, "{}\n") is False  # identical: untouched
    assert os.stat(path).st_mtime_ns == mtime
    assert write_atomic(path, '{"a": 1}\n') is True
    assert read_text(path) == '{"a": 1}\n'
    assert [p.name for p in path.parent.iterdir()] == ["b.json"]  # no temp files left


def test_read_missing_and_iter(tmp_path: Path) -> None:
    assert read_text(tmp_path / "nope.json") is None
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "x.json").write_text("{}")
    (tmp_path / "a" / ".x.json.123.tmp").write_text("{}")
    (tmp_path / "b.json").write_text("{}")
    assert [p.relative_to(tmp_path).as_posix() for p in iter_baseline_files(tmp_path)] == [
        "a/x.json",
        "b.json",
    ]
    assert list(iter_baseline_files(tmp_path / "none")) == []


def test_a_long_test_and_name_fit_one_file_name() -> None:
    test, name = "test_" + "f" * 145, "n" * 150
    paths = {baseline_relpath(f"t.py::{test}", n) for n in (name, name + "x", name + "y")}
    assert len(paths) == 3
    for rel in paths:
        assert len(rel.name.encode()) <= 255
        assert rel.name.startswith("test_" + "f" * 100) and "@" + "n" * 100 in rel.name
    # one long part and one short: only the long one is cut
    short = baseline_relpath("t.py::" + "test_" + "g" * 200, "head").name
    assert short.endswith("@head.json") and len(short) <= 255
    # every name that fits keeps its path
    assert posix("t.py::test_x", "n" * 110) == "t/test_x@" + "n" * 110 + ".json"


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no named pipes on this OS")
def test_anything_but_a_regular_file_is_refused(tmp_path: Path) -> None:
    pipe = tmp_path / "pipe.json"
    os.mkfifo(pipe)
    with pytest.raises(BaselineError, match="it is a named pipe, not a regular file"):
        read_text(pipe)  # at once: it never waits for a writer
    with pytest.raises(BaselineError, match="pipe.json: cannot read baseline"):
        write_atomic(pipe, "{}\n")
    assert pipe.is_fifo()
    (tmp_path / "dir.json").mkdir()
    with pytest.raises(BaselineError, match="it is a directory"):
        read_text(tmp_path / "dir.json")
    link = tmp_path / "link.json"
    link.symlink_to(pipe)
    with pytest.raises(BaselineError, match="named pipe"):
        read_text(link)


MEETING = [
    "tests/test_m.py::TestR::test_cost",  # a class ...
    "tests/test_m/TestR.py::test_cost",  # ... and a module of the same name
    "tests/test_m/TestR",  # a module without ".py" (another plugin's file)
    "tests/test_m/TestR.py",  # a module-level item
    "tests/test_m/TestR.py::_module",
    "t.py::test_x[A]",  # ids that differ only by case
    "t.py::test_x[a]",
    "t.py::Test_A",
    "t.py::test_a",
    "T.py::test_a",
    "t.py::test_x[CON]",
    "t.py::test_x[con]",
]
APART = [
    "t.py::test_x[b]",  # meets nothing: keeps its usual path
    "t/CON.py::test_y",
    "t/con.py::test_y",
    "t.py::test_x[a~1]",
]


def test_paths_are_one_to_one_also_where_case_is_ignored(tmp_path: Path) -> None:
    ids = MEETING + APART
    paths = BaselinePaths(tmp_path, ids)
    for name in (None, "head", "Head"):
        rels = [paths.relpath(i, name).as_posix() for i in ids]
        assert len({r.lower() for r in rels}) == len(ids), rels
    for nodeid in MEETING:
        assert paths.met(nodeid) and "~" in paths.relpath(nodeid).name, nodeid
    for nodeid in APART:
        assert paths.relpath(nodeid) == baseline_relpath(nodeid), nodeid  # no churn
    assert posix("t/CON.py::test_y").split("/")[1].startswith("CON-")  # reserved: hashed


def test_a_path_apart_stays_once_the_other_test_is_gone(tmp_path: Path) -> None:
    both = BaselinePaths(tmp_path, ["t.py::test_x[A]", "t.py::test_x[a]"])
    rel = both.relpath("t.py::test_x[A]", "n")
    assert rel.name.startswith("test_x[A]~") and rel.name.endswith("@n.json")
    write_atomic(tmp_path / rel, "{}\n")
    alone = BaselinePaths(tmp_path, ["t.py::test_x[A]"])  # [a] deleted, or not generated here
    assert alone.relpath("t.py::test_x[A]", "n") == rel
    assert alone.relpath("t.py::test_x[A]") == baseline_relpath("t.py::test_x[A]")


def test_this_repos_baselines_keep_their_paths() -> None:
    root = Path(__file__).parents[3] / "baselines"
    files = list(iter_baseline_files(root))
    assert files
    ids = []
    for path in files:
        data = json.loads(path.read_text(encoding="utf-8"))
        ids.append(data["test"])
        assert baseline_relpath(data["test"], data.get("name")) == path.relative_to(root)
    paths = BaselinePaths(root, ids)
    for path, nodeid in zip(files, ids, strict=True):
        name = json.loads(path.read_text(encoding="utf-8")).get("name")
        assert paths.relpath(nodeid, name) == path.relative_to(root)


def test_an_unreadable_baseline_names_its_file_and_is_left_alone(tmp_path: Path) -> None:
    latin = tmp_path / "latin.json"
    latin.write_bytes(b'{"test": "caf\xe9"}')
    with pytest.raises(BaselineError, match=r"latin\.json: cannot read baseline \('utf-8'"):
        read_text(latin)
    loop = tmp_path / "loop.json"
    loop.symlink_to(loop)  # a link to itself: opening it fails, though it is there
    with pytest.raises(BaselineError, match=r"loop\.json: cannot read baseline \(.*symbolic"):
        read_text(loop)
    assert latin.read_bytes() == b'{"test": "caf\xe9"}'


def test_a_baseline_that_cannot_be_written_says_which_directory_to_fix(tmp_path: Path) -> None:
    (tmp_path / "baselines").write_text("a file where the directory should be")
    target = tmp_path / "baselines" / "sub" / "test_x.json"
    with pytest.raises(BaselineError) as caught:
        write_atomic(target, "{}\n")
    assert str(caught.value).startswith(f"cannot write baseline {target}: ")
    assert f"Check that {target.parent} is writable" in str(caught.value)
