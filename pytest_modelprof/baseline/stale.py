"""Stale baselines: files that no test uses any more.

Detection trusts only a run that looked at everything (:class:`RunCoverage`): nothing
deselected (``-k``, ``-m``, ``--deselect``, ``--lf``), every selected test ran (no ``-x`` or
``--maxfail`` stop, no interrupt, no lost xdist worker) and every module collected. A disabled
gate proves nothing and is not asked. In such a run a baseline is stale when no profile used it
and we *know* its test no longer needs it: its test ran to the end, gate included, without using
it (a ``name=`` went away), or a collector that would contain the test (its module or class) was
collected and the test function is not among its children (it was renamed or deleted), or its
module file is gone. Tests that were skipped or failed before their gate finished keep their
baselines, and so do parameters of a test function that this run did not generate
(``["cpu"] + (["gpu"] if HAVE_GPU else [])``): a machine without them proves nothing.

Only files this plugin wrote are candidates: a baseline document (with our ``schema_version``)
at the very path its ``test`` and ``name`` map to (the usual one or the one apart), so
``--modelprof-baseline-dir=.`` never touches anyone else's JSON.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Set
from dataclasses import dataclass, field
from pathlib import Path

from pytest_modelprof.baseline.store import baseline_relpath, iter_baseline_files
from pytest_modelprof.errors import BaselineError

__all__ = [
    "RunCoverage",
    "survey",
    "prune",
    "stored_inputs",
]


@dataclass
class RunCoverage:
    """What one run looked at, gathered by the plugin (and sent from xdist workers)."""

    expanded: dict[str, set[str]] = field(default_factory=dict)  # collector -> children
    completed: set[str] = field(default_factory=set)  # ran to the end, gate included
    selected: set[str] = field(default_factory=set)  # items left after deselection
    ran: set[str] = field(default_factory=set)  # items that reported at least a setup
    deselected: int = 0
    collect_errors: int = 0
    workers_started: int = 0  # xdist workers that came up ...
    workers_reported: int = 0  # ... and those that finished and sent their collection back

    def worker_json(self) -> str:
        """What a worker knows and the controller does not (collection happens on workers)."""
        return json.dumps(
            {
                "expanded": {k: sorted(v) for k, v in sorted(self.expanded.items())},
                "selected": sorted(self.selected),
                "deselected": self.deselected,
            }
        )

    def merge_worker_json(self, text: str) -> None:
        """Add one worker's :meth:`worker_json`; every worker collects (and deselects) alike."""
        data = json.loads(text)
        for collector, children in data["expanded"].items():
            self.expanded.setdefault(collector, set()).update(children)
        self.selected.update(data["selected"])
        self.deselected = max(self.deselected, int(data["deselected"]))

    def incomplete(self, subset_option: str | None = None) -> str | None:
        """Why this run cannot prove a baseline unused (one line), or ``None`` when it can."""
        if self.collect_errors:
            return f"{self.collect_errors} collection error(s)"
        if self.deselected:
            return f"{self.deselected} test(s) deselected (-k, -m, --deselect or --lf)"
        if subset_option:
            return f"{subset_option} runs a subset of the tests"
        lost = self.workers_started - self.workers_reported
        if lost:
            return f"{lost} xdist worker(s) crashed or sent nothing back"
        missing = len(self.selected - self.ran)
        if missing:
            return f"{missing} test(s) did not run (-x, --maxfail or an interrupt stopped the run)"
        return None


def parent_nodeid(nodeid: str) -> str:
    """``d/t.py::C::f[x::y]`` -> ``d/t.py::C`` -> ``d/t.py`` -> ``d`` -> ``""``."""
    base = nodeid.partition("[")[0] if nodeid.endswith("]") else nodeid
    if "::" in base:
        return base.rsplit("::", 1)[0]
    return base.rsplit("/", 1)[0] if "/" in base else ""


def function_of(nodeid: str) -> str:
    """The test a node id names, less its parameters: ``d/t.py::C::f[x::y]`` -> ``d/t.py::C::f``."""
    module, sep, rest = nodeid.partition("::")
    if rest.endswith("]") and "[" in rest:
        rest = rest.partition("[")[0]
    return module + sep + rest


def _absent(test: str, expanded: Mapping[str, Set[str]]) -> str | None:
    """Whether the nearest collected ancestor of ``test`` lacks the branch leading to it:
    ``"gone"`` when it does, ``"not generated"`` when only the test's parameters are missing
    (its function is there with other parameters: the run did not generate this one, which
    proves nothing about a machine that does), ``None`` when the test is there or unknown."""
    node = test
    while node:
        parent = parent_nodeid(node)
        children = expanded.get(parent)
        if children is not None:
            if node in children:
                return None
            if node == test and function_of(test) in {function_of(c) for c in children}:
                return "not generated"
            return "gone"
        node = parent
    return None


def _owner(path: Path, directory: Path) -> str | None:
    """The node id a file names as its test, if the file sits where we would write its baseline.

    Plain ``json`` (pydantic only for files about to be called stale: see :func:`_is_ours`).
    """
    if path.is_symlink() or not path.resolve().is_relative_to(directory.resolve()):
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return None  # unreadable: a test that uses it reports it; never delete what we can't read
    if not isinstance(data, dict):
        return None
    test, name = data.get("test"), data.get("name")
    if not isinstance(test, str) or not (name is None or isinstance(name, str)):
        return None
    try:
        ours = {baseline_relpath(test, name, apart=apart) for apart in (False, True)}
    except BaselineError:
        return None
    if path.relative_to(directory) not in ours:
        return None  # not where we would have written it: a copy, or someone else's file
    return test


def _is_ours(path: Path) -> bool:
    """Whether ``path`` is a baseline document of a schema version we know (or migrate)."""
    from pytest_modelprof.baseline.document import BaselineDocument

    try:
        # An incomplete file is still ours: it goes with the test that owned it.
        BaselineDocument.from_json(
            path.read_text(encoding="utf-8"), source=str(path), complete=False
        )
    except (OSError, UnicodeDecodeError, BaselineError):
        return False
    return True


@dataclass
class Survey:
    """The baseline files no test used in a complete run, sorted by what may be done with them."""

    stale: list[Path] = field(default_factory=list)  # provably unused: listed, pruned on request
    not_generated: list[Path] = field(default_factory=list)  # its test exists: always kept


def survey(
    directory: Path,
    *,
    used: Set[str],
    expanded: Mapping[str, Set[str]],
    completed: Set[str],
    rootdir: Path,
) -> Survey:
    """The unused baseline files under ``directory``, judged as if the run were complete.

    ``used`` holds relative posix paths, ``expanded`` maps each collected collector's node id
    to its children's node ids (before deselection), ``completed`` the tests that ran through
    their gate. Ask :meth:`RunCoverage.incomplete` first: only a complete run may act on this.
    """
    found = Survey()
    for path in iter_baseline_files(directory):
        if path.relative_to(directory).as_posix() in used:
            continue
        test = _owner(path, directory)
        if test is None:
            continue
        module = test.partition("::")[0]
        absent = _absent(test, expanded)
        if absent == "not generated":
            if _is_ours(path):
                found.not_generated.append(path)
            continue
        unused = test in completed or absent == "gone" or not (rootdir / module).is_file()
        if unused and _is_ours(path):
            found.stale.append(path)
    return found


def find_stale(
    directory: Path,
    *,
    used: Set[str],
    expanded: Mapping[str, Set[str]],
    completed: Set[str],
    rootdir: Path,
) -> list[Path]:
    """The stale baseline files under ``directory`` (see :func:`survey`)."""
    return survey(
        directory, used=used, expanded=expanded, completed=completed, rootdir=rootdir
    ).stale


def stored_inputs(path: Path) -> tuple[str, list[dict[str, object]]] | None:
    """The model and inputs a baseline file holds (plain JSON), ``None`` when unreadable."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return None
    if not isinstance(data, dict) or not isinstance(data.get("model"), str):
        return None
    inputs = data.get("inputs")
    if not isinstance(inputs, list) or not all(isinstance(i, dict) for i in inputs):
        return None
    return data["model"], inputs


def prune(directory: Path, paths: Iterable[Path]) -> None:
    """Delete ``paths`` and the directories under ``directory`` they leave empty."""
    for path in paths:
        path.unlink(missing_ok=True)
        parent = path.parent
        while parent != directory and parent.is_relative_to(directory):
            try:
                parent.rmdir()
            except OSError:
                break
            parent = parent.parent
