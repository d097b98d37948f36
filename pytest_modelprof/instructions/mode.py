"""``--modelprof-instructions``: what a test with an instructions limit does without valgrind."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from pytest_modelprof.errors import SettingsError

__all__ = ["INSTRUCTIONS_MODES", "instructions_mode"]

#: ``error`` (the default): the test fails naming the install; ``skip``: it is skipped.
INSTRUCTIONS_MODES: Final = ("error", "skip")


def instructions_mode(cli: Mapping[str, object], ini: Mapping[str, object]) -> str:
    """The mode from the command line, else the ini file, else ``error``."""
    for source, values in (("--modelprof-instructions", cli), ("ini modelprof_instructions", ini)):
        raw = values.get("instructions")
        if raw is None or raw == "":
            continue
        mode = str(raw).strip().lower()
        if mode not in INSTRUCTIONS_MODES:
            raise SettingsError(
                f"{source}: bad value {raw!r}; use {' or '.join(INSTRUCTIONS_MODES)}"
            )
        return mode
    return "error"
