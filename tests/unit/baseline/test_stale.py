"""Stale baselines: only those we know no test needs."""

from __future__ import annotations

import json
from pathlib import Path

from pytest_modelprof.baseline.document import (
    BASELINE_SCHEMA_VERSION,
    BaselineDocument,
    BaselineEnvironment,
)
from pytest_modelprof.baseline.stale import (
    RunCoverage,
    find_stale,
    function_of,
    parent_nodeid,
    prune,
    survey,
)
from pytest_modelprof.baseline.store import baseline_relpath


def put(root: Path, rel: str, test: str, name: str | None = None) -> Path:
    """A baseline as the gate writes it (``rel`` must be where ``test`` and ``name`` map)."""
    assert rel in {baseline_relpath(test, name, apart=a).as_posix() for a in (False, True)}
    path = root / "baselines" / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    env = BaselineEnvironment(torch_version="2", device="cpu", dtype="float32", capture_mode="meta")
    doc = BaselineDocument(
        test=test,
        name=name,
        model="m",
        inputs=[],
        metrics={},
        layers=[],
        settings={},
        environment=env,
    )
    path.write_text(doc.to_json())
    return path


def test_find_stale(tmp_path: Path) -> None:
    (tmp_path / "tests").mkdir()
    for name in ("test_a.py", "test_b.py"):
        (tmp_path / "tests" / name).write_text("")
    bdir = tmp_path / "baselines"
    used = put(tmp_path, "tests/test_a/test_used.json", "tests/test_a.py::test_used")
    gone_name = put(
        tmp_path, "tests/test_a/test_used@old.json", "tests/test_a.py::test_used", name="old"
    )
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


def test_parameters_not_generated_are_kept_apart(tmp_path: Path) -> None:
    (tmp_path / "t.py").write_text("")
    bdir = tmp_path / "baselines"
    gpu = put(tmp_path, "t/test_dev[gpu].json", "t.py::test_dev[gpu]")
    in_class = put(tmp_path, "t/C/test_dev[gpu].json", "t.py::C::test_dev[gpu]")
    plain = put(tmp_path, "t/test_dev.json", "t.py::test_dev")  # before it was parametrised
    gone = put(tmp_path, "t/test_old[gpu].json", "t.py::test_old[gpu]")
    found = survey(
        bdir,
        used=set(),
        expanded={
            "t.py": {"t.py::test_dev[cpu]", "t.py::C"},
            "t.py::C": {"t.py::C::test_dev[cpu]"},
        },
        completed={"t.py::test_dev[cpu]", "t.py::C::test_dev[cpu]"},
        rootdir=tmp_path,
    )
    assert found.stale == [gone]
    assert sorted(found.not_generated) == sorted([gpu, in_class, plain])


def test_a_path_apart_is_ours_too(tmp_path: Path) -> None:
    (tmp_path / "t.py").write_text("")
    bdir = tmp_path / "baselines"
    rel = baseline_relpath("t.py::test_x[A]", apart=True).as_posix()
    apart = put(tmp_path, rel, "t.py::test_x[A]")
    found = find_stale(
        bdir, used=set(), expanded={"t.py": {"t.py::test_y"}}, completed=set(), rootdir=tmp_path
    )
    assert found == [apart]


def test_function_of() -> None:
    assert function_of("d/t.py::C::f[x::y]") == "d/t.py::C::f"
    assert function_of("d[1]/t.py::f") == "d[1]/t.py::f"
    assert function_of("t.py::f") == "t.py::f"


def test_parent_nodeid() -> None:
    assert parent_nodeid("d/t.py::C::f[x::y]") == "d/t.py::C"
    assert parent_nodeid("d/t.py::C") == "d/t.py"
    assert parent_nodeid("d/t.py") == "d"
    assert parent_nodeid("t.py") == ""


def test_only_our_documents_at_their_own_path_are_candidates(tmp_path: Path) -> None:
    bdir = tmp_path / "baselines"
    ours = put(tmp_path, "test_gone/test_x.json", "test_gone.py::test_x")  # module deleted
    text = ours.read_text()
    foreign = bdir / "data" / "case.json"  # a "test" key, but not our schema
    foreign.parent.mkdir()
    foreign.write_text(json.dumps({"test": "test_gone.py::test_x", "rows": [1]}))
    copy = bdir / "backup" / "test_gone" / "test_x.json"  # ours, but not where we write it
    copy.parent.mkdir(parents=True)
    copy.write_text(text)
    newer = bdir / "test_gone" / "test_y.json"  # a newer schema: not ours to judge
    newer.write_text(
        text.replace(
            f'"schema_version": {BASELINE_SCHEMA_VERSION}',
            f'"schema_version": {BASELINE_SCHEMA_VERSION + 1}',
        ).replace("test_gone.py::test_x", "test_gone.py::test_y")
    )
    hidden = bdir / ".venv" / "test_gone" / "test_x.json"
    hidden.parent.mkdir(parents=True)
    hidden.write_text(text)
    link = bdir / "test_gone" / "test_z.json"
    link.symlink_to(tmp_path / "elsewhere.json")
    (tmp_path / "elsewhere.json").write_text(text.replace("test_x", "test_z"))
    stale = find_stale(bdir, used=set(), expanded={}, completed=set(), rootdir=tmp_path)
    assert stale == [ours]


def test_run_coverage_says_why_a_run_proves_nothing() -> None:
    full = RunCoverage(selected={"t.py::a", "t.py::b"}, ran={"t.py::a", "t.py::b"})
    assert full.incomplete() is None
    assert full.incomplete("--lf") == "--lf runs a subset of the tests"
    stopped = RunCoverage(selected={"t.py::a", "t.py::b"}, ran={"t.py::a"})
    assert stopped.incomplete() == (
        "1 test(s) did not run (-x, --maxfail or an interrupt stopped the run)"
    )
    assert RunCoverage(deselected=2).incomplete() == (
        "2 test(s) deselected (-k, -m, --deselect or --lf)"
    )
    assert RunCoverage(collect_errors=1).incomplete() == "1 collection error(s)"
    assert RunCoverage(workers_started=2, workers_reported=1).incomplete() == (
        "1 xdist worker(s) crashed or sent nothing back"
    )


def test_worker_coverage_round_trip() -> None:
    worker = RunCoverage(
        expanded={"t.py": {"t.py::a", "t.py::b"}}, selected={"t.py::a"}, deselected=1
    )
    controller = RunCoverage()
    controller.merge_worker_json(worker.worker_json())
    controller.merge_worker_json(worker.worker_json())  # every worker collects the same
    assert controller.expanded == worker.expanded
    assert controller.selected == {"t.py::a"} and controller.deselected == 1


def test_files_that_name_no_test_of_ours_are_never_stale(tmp_path: Path) -> None:
    bdir = tmp_path / "baselines"
    ours = put(tmp_path, "test_gone/test_x.json", "test_gone.py::test_x")
    others = {
        "list.json": "[1, 2]",
        "number_test.json": json.dumps({"test": 5, "metrics": {}}),
        "number_name.json": json.dumps({"test": "test_gone.py::test_x", "name": 3}),
        "no_path.json": json.dumps({"test": "", "metrics": {}}),
        "broken.json": '{"test": ',
    }
    for rel, text in others.items():
        (bdir / rel).write_text(text)
    (bdir / "latin.json").write_bytes(b'{"test": "caf\xe9"}')
    stale = find_stale(bdir, used=set(), expanded={}, completed=set(), rootdir=tmp_path)
    assert stale == [ours]
    assert all((bdir / rel).exists() for rel in [*others, "latin.json"])
