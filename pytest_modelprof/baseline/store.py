"""Where baselines live and how they are read and written.

Paths mirror the test module: ``tests/test_zoo.py::TestA::test_b[x]`` with ``name="head"``
maps to ``<dir>/tests/test_zoo/TestA/test_b[x]@head.json``. Every path component is reduced to
characters that every filesystem accepts (``A-Z a-z 0-9 . _ - [ ] = + ,``); when that loses
information, or a component is too long or a reserved Windows name, a short hash of the original
text is appended, so distinct node ids never share a file and the result is the same on every OS.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Iterator
from pathlib import Path

from pytest_modelprof._files import write_text_atomic
from pytest_modelprof.errors import BaselineError

__all__ = [
    "baseline_relpath",
    "sanitize_component",
    "read_text",
    "write_atomic",
    "iter_baseline_files",
]

SUFFIX = ".json"
NAME_SEPARATOR = "@"  # never produced by sanitize_component, so it cannot collide
MAX_COMPONENT = 120  # well under the 255-byte limit of common filesystems, leaves room for @name
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


def baseline_relpath(nodeid: str, name: str | None = None) -> Path:
    """The baseline path of one profile of one test, relative to the baseline directory."""
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
    filename = sanitize_component(last)
    if name is not None:
        filename += NAME_SEPARATOR + sanitize_component(name)
    return Path(*dirs, filename + SUFFIX)


def read_text(path: Path) -> str | None:
    """The file's text, ``None`` when it does not exist; other I/O errors name the file."""
    try:
        return path.read_text(encoding="utf-8")
    except (FileNotFoundError, NotADirectoryError):  # no such file, or a parent is a file
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise BaselineError(f"{path}: cannot read baseline ({exc})") from None


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
