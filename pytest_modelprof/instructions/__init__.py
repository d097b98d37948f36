"""CPU instruction counts of a model's forward, backward and training step under callgrind.

A figure that does not move with load, neighbours or clock speed: the instructions the CPU
executes, counted by valgrind's callgrind in one long-lived server process per session
(:class:`InstructionServer`), with collection switched on only around the measured calls.
Importing this package imports neither torch nor pydantic; the server imports torch.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pytest_modelprof.instructions.client import (
    DEFAULT_CALLS,
    DEFAULT_WARMUP,
    INSTALL_HINT,
    InstructionServer,
    InstructionsUnavailable,
    find_valgrind,
)

if TYPE_CHECKING:
    from pytest_modelprof.instructions.counts import InstructionCounts

__all__ = [
    "DEFAULT_CALLS",
    "DEFAULT_WARMUP",
    "INSTALL_HINT",
    "InstructionCounts",
    "InstructionServer",
    "InstructionsUnavailable",
    "find_valgrind",
]


def __getattr__(name: str) -> Any:
    if name == "InstructionCounts":
        from pytest_modelprof.instructions.counts import InstructionCounts

        return InstructionCounts
    raise AttributeError(name)
