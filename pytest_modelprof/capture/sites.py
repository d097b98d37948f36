"""Where an op was called from: the innermost line of the model's own code above the dispatch.

The tracer asks once per forward op. What each code object is (torch's, ours, the standard
library's, or the model's) is decided once per code object, each distinct ``file:line`` is
formatted once, and the depth of the model frame is remembered per layer and op, so the per-op
work is two frame lookups and a few dictionary lookups.
"""

from __future__ import annotations

import functools
import os
import sys
import sysconfig
from collections.abc import Hashable
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
        # key -> how deep the model frame was last time (see here()).
        self._depths: dict[Hashable, int] = {}

    def _kind(self, code: CodeType) -> int:
        kind = self._kinds.get(code)
        if kind is None:
            kind = self._kinds[code] = _kind(code.co_filename)
        return kind

    def _site(self, frame: FrameType) -> int:
        code, line = frame.f_code, frame.f_lineno
        site = self._ids.get((code, line))
        if site is None:
            site = self._ids[code, line] = len(self.locations)
            self.locations.append(_location(code.co_filename, line))
        return site

    def here(self, key: Hashable) -> int:
        """The site of the op being recorded: the innermost frame of model code between the
        dispatch and our capture driver, or :data:`NO_SITE` when there is none.

        Called by the tracer's ``record_op`` (depth 1), itself called by the dispatch hook.
        ``key`` (the layer's type and the op) remembers how deep the model frame was: an op of
        one kind of layer almost always comes the same way, and ``sys._getframe(depth)`` reaches
        that frame without building the frames in between (each hop of a walk builds one: most
        of its cost). The guess is taken when that frame is model code and the one below it is
        not.
        NB: a model -> torch -> model -> op path of the same layer type and op at another depth
        would be named by its outer model line; the full walk runs whenever the guess fails.
        """
        depth = self._depths.get(key)
        if depth is not None:
            try:
                frame = sys._getframe(depth)
                below = sys._getframe(depth - 1).f_code
            except ValueError:  # a shallower stack than last time
                pass
            else:
                if self._kind(frame.f_code) == _MODEL and self._kind(below) != _MODEL:
                    return self._site(frame)
        found: FrameType | None = sys._getframe(2)  # the dispatch hook
        depth = 2
        inside = True  # still in our own dispatch hook
        while found is not None:
            kind = self._kind(found.f_code)
            if kind == _MODEL:
                self._depths[key] = depth
                return self._site(found)
            if kind == _OURS and not inside:
                return NO_SITE  # back in the code that called the model: torch's code only
            if kind == _LIBRARY:
                inside = False
            found = found.f_back
            depth += 1
        return NO_SITE
