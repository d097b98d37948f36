"""Writing files so that readers never see half of one (standard library only)."""

from __future__ import annotations

import functools
import os
import tempfile
from pathlib import Path

__all__ = ["write_text_atomic"]


def _umask() -> int:
    """The process umask, without changing it where the OS lets us read it (Linux 4.7+)."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    return _probed_umask()


@functools.cache
def _probed_umask() -> int:
    # Elsewhere the only way to read the umask is to set it and put it back, and a thread that
    # creates a file in between gets mode 0666: so do it once per process, not per write.
    mask = os.umask(0o077)
    os.umask(mask)
    return mask


def write_text_atomic(path: Path, text: str) -> None:
    """Write ``text`` to a temporary file beside ``path``, then rename it into place.

    The file gets the permissions a plain ``open()`` would give it (0666 less the umask, or the
    existing file's mode), not ``mkstemp``'s private 0600: baselines and reports are shared.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        mode = path.stat().st_mode & 0o7777
    except OSError:
        mode = 0o666 & ~_umask()
    # The temporary name is longer than the file's: a name near the 255-byte limit would not fit.
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name[:200]}.", suffix=".tmp", dir=path.parent)
    try:
        os.chmod(tmp, mode)
        # newline="": write "\n" as "\n" on every OS, so files are byte-identical everywhere.
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as handle:
            handle.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
