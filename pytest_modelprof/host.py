"""The machine this process runs on, as far as the counts care: the CPU's model and the
instruction-set flags that decide which kernels run. Standard library only (a leaf): the
valgrind client reads it without torch, ``modelprof bench`` records it.
"""

from __future__ import annotations

import platform
from pathlib import Path
from typing import Final

__all__ = ["cpu_info", "cpu_name"]


#: The CPU features that decide which kernels run (vector widths, fused multiply-add, matrix
#: units); others in /proc/cpuinfo (mitigations, virtualisation) do not change instructions.
_ISA_PREFIXES: Final = (
    "sse",
    "ssse",
    "avx",
    "fma",
    "f16c",
    "amx",
    "bmi",
    "popcnt",
    "vnni",
    "asimd",
    "sve",
    "neon",
)


def cpu_info(text: str | None = None) -> tuple[str, str]:
    """``(model name, ISA flags)`` from ``/proc/cpuinfo`` (or ``text``); ``("unknown", "")``
    where there is none. Flags are the instruction-set ones, sorted and space-separated."""
    if text is None:
        try:
            text = Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace")
        except OSError:
            text = ""
    name, flags = "unknown", ""
    for line in text.splitlines():
        key, _, value = line.partition(":")
        key = key.strip().lower()
        if key in ("model name", "cpu model") and name == "unknown":
            name = " ".join(value.split()) or name
        elif key in ("flags", "features") and not flags:
            flags = " ".join(
                sorted({f for f in value.split() if f.lower().startswith(_ISA_PREFIXES)})
            )
    return name, flags


def cpu_name() -> str:
    """The CPU's model name (:func:`cpu_info`), else what :mod:`platform` knows, else
    ``unknown``."""
    name = cpu_info()[0]
    if name != "unknown":
        return name
    return platform.processor() or platform.machine() or "unknown"
