"""Progress of a long phase on stderr: what runs and how long it has run (a leaf).

A phase that takes minutes (valgrind starting and counting, a sweep of large models) says so
every ``every`` seconds, so a CI log never goes quiet for three quarters of an hour. Wall time
grows with the machine's load; the line says how long it has been, not how long it will be.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TextIO

__all__ = ["ProgressFn", "StderrProgress", "heartbeat"]

ProgressFn = Callable[[str, int, int], None]
"""Called as ``progress(stage, done, total)`` while measuring."""


def format_elapsed(seconds: float) -> str:
    """``42 s``, ``1 min 05 s``, ``49 min 47 s``."""
    total = round(seconds)
    return f"{total} s" if total < 60 else f"{total // 60} min {total % 60:02d} s"


@contextmanager
def heartbeat(
    label: str, phase: str, *, every: float = 30.0, stream: TextIO | None = None
) -> Iterator[Callable[[str], None]]:
    """Say ``label: phase ... N s elapsed`` on stderr every ``every`` seconds until the block
    ends, then ``label: done in N s``. The block gets a function that names the next phase."""
    out = stream if stream is not None else sys.stderr
    start = time.monotonic()
    current = [phase]
    stop = threading.Event()

    def say(text: str) -> None:
        out.write(f"{label}: {text}\n")
        out.flush()

    def beat() -> None:
        while not stop.wait(every):
            say(f"{current[0]} ... {format_elapsed(time.monotonic() - start)} elapsed")

    def next_phase(name: str) -> None:
        current[0] = name
        say(f"{name} ({format_elapsed(time.monotonic() - start)} so far)")

    say(f"{phase} ...")
    thread = threading.Thread(target=beat, name=f"modelprof progress: {label}", daemon=True)
    thread.start()
    try:
        yield next_phase
    finally:
        stop.set()
        thread.join()
        say(f"done in {format_elapsed(time.monotonic() - start)}")


class StderrProgress:
    """A one-line progress display on stderr (rewritten in place on a terminal).

    Nothing goes to stdout, so ``--json`` output stays a clean document.
    """

    def __init__(self, label: str, stream: TextIO | None = None) -> None:
        self.label = label
        self.stream = stream if stream is not None else sys.stderr
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self._stage = ""
        self._width = 0

    def __call__(self, stage: str, done: int, total: int) -> None:
        if self.tty:
            filled = round(20 * done / total) if total else 20
            line = f"{self.label}: {stage:<16} [{'#' * filled}{'.' * (20 - filled)}] " \
                   f"{done}/{total}"
            pad = " " * max(self._width - len(line), 0)
            self._width = len(line)
            self.stream.write("\r" + line + pad)
            self.stream.flush()
        elif stage != self._stage:
            # Not a terminal (CI logs): one line per stage, not one per round.
            self.stream.write(f"{self.label}: {stage} ...\n")
            self.stream.flush()
        self._stage = stage

    def close(self) -> None:
        """End the progress line."""
        if self.tty and self._width:
            self.stream.write("\r" + " " * self._width + "\r")
            self.stream.flush()
