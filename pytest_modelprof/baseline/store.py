"""Where baselines live and how they are read and written.

Paths mirror the test module: ``tests/test_zoo.py::TestA::test_b[x]`` with ``name="head"``
maps to ``<dir>/tests/test_zoo/TestA/test_b[x]@head.json``. Every path component is reduced to
characters that every filesystem accepts (``A-Z a-z 0-9 . _ - [ ] = + ,``); when that loses
information, or a component is too long or a reserved Windows name, a short hash of the original
text is appended, and the result is the same on every OS. Node ids can still meet (a class and a
module of one name, ids that differ only by case): :class:`BaselinePaths` gives those paths
apart. A file name stays within 255 bytes, and only regular files are read.
"""

from __future__ import annotations

import hashlib
import os
import re
import stat
from collections.abc import Iterable, Iterator
from pathlib import Path

from pytest_modelprof._files import write_text_atomic
from pytest_modelprof.errors import BaselineError

__all__ = [
    "BaselinePaths",
    "baseline_relpath",
    "sanitize_component",
    "read_text",
    "write_atomic",
    "iter_baseline_files",
]

SUFFIX = ".json"
NAME_SEPARATOR = "@"  # never produced by sanitize_component, so it cannot collide
APART_SEPARATOR = "~"  # the same: a path apart never equals a usual path
MAX_COMPONENT = 120  # well under the 255-byte limit of common filesystems, leaves room for @name
MAX_NAME = 255  # bytes in a file name on common filesystems (every character here is ASCII)
_UNSAFE = re.compile(r"[^A-Za-z0-9._\-\[\]=+,]")
_WINDOWS_RESERVED = frozenset(
    {"con", "prn", "aux", "nul"}
    | {f"com{i}" for i in range(1, 10)}
    | {f"lpt{i}" for i in range(1, 10)}
)


def _digest(text: str) -> str:
    return hashlib.sha1(text.encode("utf-8"), usedforsecurity=False).hexdigest()[:8]


def sanitize_component(text: str) -> str:
    """One safe path component for ``text``; injective thanks to the hash suffix."""
    safe = _UNSAFE.sub("_", text)
    if safe.startswith("."):  # no hidden files, no "." or ".."
        safe = "_" + safe[1:]
    safe = safe.rstrip(". ")  # Windows strips trailing dots and spaces
    lossy = safe != text or not safe
    if safe.split(".")[0].lower() in _WINDOWS_RESERVED:
        lossy = True
    if len(safe) > MAX_COMPONENT:
        safe = safe[:MAX_COMPONENT]
        lossy = True
    if lossy:
        safe = f"{safe or '_'}-{_digest(text)}"
    return safe


def baseline_relpath(nodeid: str, name: str | None = None, *, apart: bool = False) -> Path:
    """The baseline path of one profile of one test, relative to the baseline directory.

    ``apart`` gives the test's path of its own, for a test whose usual path another test
    shares (:class:`BaselinePaths`): a hash of the node id follows the test's part of the
    file name, after a ``~`` that no usual path has.
    """
    module, _, rest = nodeid.partition("::")
    module_parts = [p for p in module.replace("\\", "/").split("/") if p]
    if not module_parts:
        raise BaselineError(f"cannot derive a baseline path from node id {nodeid!r}")
    stem = module_parts[-1]
    if stem.endswith(".py"):
        stem = stem[: -len(".py")]
    dirs = [sanitize_component(p) for p in module_parts[:-1]] + [sanitize_component(stem)]
    test_parts = rest.split("::") if rest else ["_module"]
    # The parametrize id may contain "::" or "/", so split only the part before "[".
    last = test_parts[-1]
    if "[" in rest:
        head, bracket, tail = rest.partition("[")
        test_parts = head.split("::")
        last = test_parts[-1] + bracket + tail
    dirs += [sanitize_component(p) for p in test_parts[:-1]]
    test = sanitize_component(last)
    label = None if name is None else sanitize_component(name)
    tag = APART_SEPARATOR + _digest(nodeid) if apart else ""
    room = MAX_NAME - len(SUFFIX) - len(tag) - (0 if label is None else len(NAME_SEPARATOR))
    test, label = _fit(test, last, label, name, room)
    filename = test + tag if label is None else test + tag + NAME_SEPARATOR + label
    return Path(*dirs, filename + SUFFIX)


def meeting_key(nodeid: str) -> str:
    """What two tests share when their usual baseline paths are one file: the path less the
    ``name=`` part (every profile of a test moves with it), in lower case (macOS and Windows
    file systems ignore case, and every character of a path is ASCII)."""
    return baseline_relpath(nodeid).as_posix().lower()


class BaselinePaths:
    """Where each test's baselines are in one run.

    A test's usual path mirrors its node id (:func:`baseline_relpath`), and that mapping meets
    itself: ``t.py::TestR::test_c`` and ``t/TestR.py::test_c`` both give ``t/TestR/test_c``,
    and ``test_x[A]`` and ``test_x[a]`` are one file where case is ignored. Tests that meet in
    the collection (``nodeids``), and tests that already have a file apart, use the path
    apart; every other test keeps its usual path, so existing baselines never move.
    """

    def __init__(self, directory: Path, nodeids: Iterable[str] = ()) -> None:
        self.directory = directory
        groups: dict[str, set[str]] = {}
        for nodeid in nodeids:
            try:
                groups.setdefault(meeting_key(nodeid), set()).add(nodeid)
            except BaselineError:
                continue  # no path at all: the gate reports it when the test runs
        self._met = {n: sorted(g - {n}) for g in groups.values() if len(g) > 1 for n in g}

    def met(self, nodeid: str) -> list[str]:
        """The collected tests whose usual path is this test's."""
        return self._met.get(nodeid, [])

    def relpath(self, nodeid: str, name: str | None = None) -> Path:
        """The path this profile's baseline is read from and written to."""
        apart = baseline_relpath(nodeid, name, apart=True)
        if nodeid in self._met or os.path.lexists(self.directory / apart):
            return apart
        return baseline_relpath(nodeid, name)


def _shorten(safe: str, text: str, limit: int) -> str:
    """``safe`` cut to ``limit`` characters, its end a hash of the original ``text``."""
    if len(safe) <= limit:
        return safe
    return f"{safe[: limit - len(_digest(text)) - 1]}-{_digest(text)}"


def _fit(
    test: str, last: str, label: str | None, name: str | None, room: int
) -> tuple[str, str | None]:
    """The test part and the ``name=`` part of a file name, shortened (each keeping its start
    and a hash of the whole) only when together they exceed ``room`` characters: a file name
    has at most 255 bytes on common filesystems, and every name that fits keeps its path."""
    if label is None or name is None:
        return _shorten(test, last, room), None
    if len(test) + len(label) <= room:
        return test, label
    half = room // 2
    if len(label) <= half:
        return _shorten(test, last, room - len(label)), label
    if len(test) <= half:
        return test, _shorten(label, name, room - len(test))
    return _shorten(test, last, half), _shorten(label, name, room - half)


_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a named pipe"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISCHR, "a device"),
    (stat.S_ISBLK, "a device"),
)


def read_text(path: Path) -> str | None:
    """The file's text, ``None`` when it does not exist; other I/O errors name the file.

    Anything but a regular file is refused: reading a named pipe would wait for a writer
    forever, so the file is opened without blocking and checked before it is read.
    """
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0))
    except (FileNotFoundError, NotADirectoryError):  # no such file, or a parent is a file
        return None
    except OSError as exc:
        raise BaselineError(f"{path}: cannot read baseline ({exc})") from None
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            kind = next((what for test, what in _KINDS if test(mode)), "a special file")
            raise BaselineError(
                f"{path}: cannot read baseline: it is {kind}, not a regular file; remove it "
                "(a baseline is the JSON file --modelprof-update-baselines writes)"
            )
        with os.fdopen(fd, encoding="utf-8") as handle:
            fd = -1  # the handle closes it now
            return handle.read()
    except (OSError, UnicodeDecodeError) as exc:
        raise BaselineError(f"{path}: cannot read baseline ({exc})") from None
    finally:
        if fd >= 0:
            os.close(fd)


def write_atomic(path: Path, text: str) -> bool:
    """Write ``text`` via a temporary file and ``os.replace``; ``False`` if already identical."""
    if read_text(path) == text:
        return False
    try:
        write_text_atomic(path, text)
    except OSError as exc:
        raise BaselineError(
            f"cannot write baseline {path}: {exc.strerror or exc}. Check that "
            f"{path.parent} is writable, or point --modelprof-baseline-dir somewhere that is."
        ) from None
    return True


def iter_baseline_files(directory: Path) -> Iterator[Path]:
    """Every baseline file under ``directory``, sorted. Hidden files (temporary ones) and hidden
    directories (``.git``, ``.venv`` when the folder is the project) are skipped: no baseline
    path has a hidden component. Symlinked directories are not followed."""
    if not directory.is_dir():
        return
    found: list[Path] = []
    for root, dirs, files in os.walk(directory):
        dirs[:] = [d for d in dirs if not d.startswith(".")]
        found += [Path(root, f) for f in files if f.endswith(SUFFIX) and not f.startswith(".")]
    yield from (path for path in sorted(found) if path.is_file())
