"""Where an op was called from: the innermost line of the model's own code above the dispatch.

The tracer asks once per forward op. Walking the stack is a few frame hops; what each code object
is (torch's, ours, the standard library's, or the model's) is decided once per code object and
cached, and each distinct ``file:line`` is formatted once, so the per-op work is a handful of
dictionary lookups.
"""

from __future__ import annotations

import functools
import os
import sys
import sysconfig
from pathlib import Path
from types import CodeType, FrameType
from typing import Final

import torch

__all__ = ["CallSites", "NO_SITE"]

#: The site of an op that no line of model code called (a backward op, a torch-only module).
NO_SITE: Final = -1

_MODEL, _LIBRARY, _OURS = 0, 1, 2

_OUR_DIR: Final = str(Path(__file__).resolve().parent.parent) + os.sep
# Our zoo's models are model code like any other.
_OUR_MODELS: Final = (_OUR_DIR + "zoo.py",)
_TORCH_DIR: Final = str(Path(torch.__file__).resolve().parent) + os.sep
_STDLIB_DIRS: Final = tuple(
    {
        str(Path(p).resolve()) + os.sep
        for key in ("stdlib", "platstdlib")
        if (p := sysconfig.get_paths().get(key))
    }
)


@functools.lru_cache(maxsize=4096)
def _kind(filename: str) -> int:
    if filename.startswith("<"):  # <frozen importlib._bootstrap>, <string>, ...
        return _LIBRARY
    path = os.path.realpath(filename)
    if path.startswith(_TORCH_DIR):
        return _LIBRARY
    if path.startswith(_OUR_DIR):
        return _MODEL if path in _OUR_MODELS else _OURS
    # NB: a system Python's site-packages sits inside its standard library's folder.
    if "site-packages" in path or "dist-packages" in path:
        return _MODEL
    return _LIBRARY if path.startswith(_STDLIB_DIRS) else _MODEL


def _location(filename: str, line: int) -> str:
    return f"{_shown(filename, os.getcwd())}:{line}"


@functools.lru_cache(maxsize=4096)
def _shown(filename: str, cwd: str) -> str:
    """``models/net.py`` relative to the working directory; an installed package's file from
    its package folder (``torchvision/models/resnet.py``)."""
    path = Path(filename)
    try:
        return path.resolve().relative_to(Path(cwd).resolve()).as_posix()
    except (ValueError, OSError):
        parts = path.parts
        for marker in ("site-packages", "dist-packages"):
            if marker in parts:
                i = len(parts) - 1 - parts[::-1].index(marker)
                return "/".join(parts[i + 1 :])
        return path.as_posix()


class CallSites:
    """The call sites of one capture: ``locations[i]`` is site ``i`` (``"net.py:12"``)."""

    def __init__(self) -> None:
        self.locations: list[str] = []
        self._kinds: dict[CodeType, int] = {}
        self._ids: dict[tuple[CodeType, int], int] = {}

    def here(self) -> int:
        """The site of the op being recorded: the innermost frame of model code between the
        dispatch and our capture driver, or :data:`NO_SITE` when there is none."""
        kinds = self._kinds
        frame: FrameType | None = sys._getframe(1)
        inside = True  # still in our own dispatch hook and tracer
        while frame is not None:
            code = frame.f_code
            kind = kinds.get(code)
            if kind is None:
                kind = kinds[code] = _kind(code.co_filename)
            if kind == _MODEL:
                key = (code, frame.f_lineno)
                site = self._ids.get(key)
                if site is None:
                    site = self._ids[key] = len(self.locations)
                    self.locations.append(_location(code.co_filename, frame.f_lineno))
                return site
            if kind == _OURS and not inside:
                return NO_SITE  # back in the code that called the model: torch's code only
            if kind == _LIBRARY:
                inside = False
            frame = frame.f_back
        return NO_SITE
