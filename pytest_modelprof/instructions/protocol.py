"""What the client and the valgrind server say to each other, and how a dump is read.

Standard library only: the client (the pytest plugin, the CLI) imports it without torch, and
the unit tests exercise it without valgrind. Messages are JSON objects, one per line.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, Literal

from pytest_modelprof.errors import ModelprofError

__all__ = [
    "Phase",
    "ProtocolError",
    "MeasureRequest",
    "encode",
    "decode",
    "parse_callgrind_total",
    "allocator_instructions",
    "newest_dump",
]

Phase = Literal["forward", "backward", "training_step"]
PHASES: Final[tuple[Phase, ...]] = ("forward", "backward", "training_step")


class ProtocolError(ModelprofError):
    """A message or a callgrind dump that cannot be read."""


@dataclass(frozen=True)
class MeasureRequest:
    """One measurement: a model by name (``model``) or pickled to a file (``pickle``).

    ``calls`` measured calls of each phase follow ``warmup`` unmeasured ones; ``sys_path``
    lets the server import the classes of a pickled model (a test module's, say).
    """

    model: str | None = None
    pickle: str | None = None
    input_shape: Any = None
    arch: Mapping[str, Any] = field(default_factory=dict)
    phases: Sequence[Phase] = ("forward",)
    calls: int = 5
    warmup: int = 10
    sys_path: Sequence[str] = ()

    def to_json(self) -> dict[str, Any]:
        """The request as a JSON object (``op: measure``)."""
        return {
            "op": "measure",
            "model": self.model,
            "pickle": self.pickle,
            "input_shape": _plain(self.input_shape),
            "arch": dict(self.arch),
            "phases": list(self.phases),
            "calls": self.calls,
            "warmup": self.warmup,
            "sys_path": list(self.sys_path),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> MeasureRequest:
        """Read a request; a bad field raises :class:`ProtocolError` naming it."""
        phases = data.get("phases", ["forward"])
        if not isinstance(phases, list) or not phases or any(p not in PHASES for p in phases):
            raise ProtocolError(f"phases: expected a list of {', '.join(PHASES)}, got {phases!r}")
        calls, warmup = data.get("calls", 5), data.get("warmup", 10)
        if not isinstance(calls, int) or isinstance(calls, bool) or calls < 1:
            raise ProtocolError(f"calls: expected an integer >= 1, got {calls!r}")
        if not isinstance(warmup, int) or isinstance(warmup, bool) or warmup < 0:
            raise ProtocolError(f"warmup: expected an integer >= 0, got {warmup!r}")
        model, pickled = data.get("model"), data.get("pickle")
        if (model is None) == (pickled is None):
            raise ProtocolError("a request names exactly one of model and pickle")
        return cls(
            model=model,
            pickle=pickled,
            input_shape=data.get("input_shape"),
            arch=dict(data.get("arch") or {}),
            phases=tuple(phases),
            calls=calls,
            warmup=warmup,
            sys_path=tuple(data.get("sys_path") or ()),
        )


def _plain(value: Any) -> Any:
    """Shapes as nested lists (tuples are not JSON)."""
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def encode(message: Mapping[str, Any]) -> bytes:
    """One message as one line."""
    return (json.dumps(dict(message), sort_keys=True) + "\n").encode()


def decode(line: bytes | str) -> dict[str, Any]:
    """One line as a message; anything but a JSON object raises :class:`ProtocolError`."""
    text = line.decode(errors="replace") if isinstance(line, bytes) else line
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ProtocolError(f"not a message: {text.strip()[:200]!r} ({exc})") from None
    if not isinstance(data, dict):
        raise ProtocolError(f"not a message: {text.strip()[:200]!r}")
    return data


_EVENTS = re.compile(r"^events:\s*(.+)$", re.MULTILINE)
_TOTAL = re.compile(r"^(summary|totals):\s*([\d ]+)$", re.MULTILINE)


def parse_callgrind_total(text: str, event: str = "Ir") -> int:
    """The total of ``event`` (instructions read) in one callgrind dump.

    Reads the ``events:`` header and the ``totals:`` line (``summary:`` in older formats); a
    dump without them raises :class:`ProtocolError`.
    """
    events = _EVENTS.search(text)
    if events is None:
        raise ProtocolError("callgrind dump without an 'events:' line")
    names = events.group(1).split()
    if event not in names:
        raise ProtocolError(f"callgrind dump does not count {event} (events: {' '.join(names)})")
    found = {kind: values.split() for kind, values in _TOTAL.findall(text)}
    values = found.get("totals") or found.get("summary")
    if values is None:
        raise ProtocolError("callgrind dump without a 'totals:' or 'summary:' line")
    index = names.index(event)
    # Trailing zero counts may be left out of the line.
    return int(values[index]) if index < len(values) else 0


#: The memory allocators' own functions: glibc's malloc and Python's pymalloc. What they execute
#: depends on the heap's history (free lists, consolidation), not on the call: in one process
#: the same forward's count moved by up to 0.3 %, all of it inside these functions
#: (benchmarks/bench_instructions.py). A measured call's figure leaves them out; the code that
#: calls them (torch's allocator, Python's object creation) is still counted.
ALLOCATOR_FUNCTIONS: Final = frozenset({
    # glibc malloc (the internal ones are named where its symbols or debug info are installed)
    "malloc", "free", "calloc", "realloc", "posix_memalign", "memalign", "aligned_alloc",
    "valloc", "pvalloc", "_int_malloc", "_int_free", "_int_memalign", "_mid_memalign",
    "_int_realloc", "malloc_consolidate", "unlink_chunk", "alloc_perturb", "free_perturb",
    "systrim", "sysmalloc", "sbrk", "__sbrk", "__glibc_morecore", "__default_morecore",
    "tcache_init", "munmap_chunk", "mremap_chunk", "malloc_trim", "mtrim",
    # CPython's object allocator and its entry points
    "PyObject_Malloc", "PyObject_Calloc", "PyObject_Realloc", "PyObject_Free",
    "_PyObject_Malloc", "_PyObject_Calloc", "_PyObject_Realloc", "_PyObject_Free",
    "PyMem_Malloc", "PyMem_Calloc", "PyMem_Realloc", "PyMem_Free", "PyMem_RawMalloc",
    "PyMem_RawCalloc", "PyMem_RawRealloc", "PyMem_RawFree", "_PyMem_RawMalloc",
    "_PyMem_RawCalloc", "_PyMem_RawRealloc", "_PyMem_RawFree", "pymalloc_alloc",
    "pymalloc_free", "pymalloc_realloc", "allocate_from_new_pool", "insert_to_usedpool",
    "insert_to_freepool", "new_arena", "_PyObject_ArenaMmap", "_PyObject_ArenaMunmap",
    "address_in_range",
})  # fmt: skip

# A compiler's clone suffix (.constprop.0, .isra.0, .part.0, .cold) or callgrind's recursion
# depth ('2) after a function's name.
_CLONE = re.compile(r"(?:'\d+|\.(?:constprop|isra|part|cold|lto_priv)(?:\.\d+)?)+$")


def _function(raw: str, names: dict[str, str]) -> str:
    """A ``fn=``/``cfn=`` value as a plain name: ``(12) name`` defines a compressed name,
    ``(12)`` refers to it; clone suffixes are dropped."""
    raw = raw.strip()
    if raw.startswith("("):
        ref, _, rest = raw.partition(")")
        if rest.strip():
            names[ref] = rest.strip()
        raw = names.get(ref, rest.strip())
    return _CLONE.sub("", raw)


def allocator_instructions(
    text: str, event: str = "Ir", functions: frozenset[str] = ALLOCATOR_FUNCTIONS
) -> int:
    """The ``event`` count that ``functions`` executed themselves (their self cost) in one
    callgrind dump: the cost lines under their ``fn=``, less the inclusive costs of the calls
    they made (the line after ``calls=``)."""
    events = _EVENTS.search(text)
    names_of_events = events.group(1).split() if events else []
    if event not in names_of_events:
        raise ProtocolError(f"callgrind dump does not count {event}")
    index = names_of_events.index(event) + 1  # after the position field
    names: dict[str, str] = {}
    inside = after_call = False
    spent = 0
    for line in text.splitlines():
        head = line[:1]
        if head.isdigit() or head in ("+", "-", "*"):
            fields = line.split()
            if inside and not after_call and index < len(fields):
                spent += int(fields[index])
            after_call = False
        elif line.startswith("fn="):
            inside = _function(line[3:], names) in functions
        elif line.startswith("cfn="):
            _function(line[4:], names)  # may define a compressed name
        elif line.startswith("calls="):
            after_call = True
    return spent


def newest_dump(prefix: Path) -> Path | None:
    """The highest-numbered dump ``<prefix>.<n>`` (callgrind numbers each dump), if any."""
    numbered = []
    for path in prefix.parent.glob(prefix.name + ".*"):
        suffix = path.name[len(prefix.name) + 1 :]
        if suffix.isdigit():
            numbered.append((int(suffix), path))
    return max(numbered)[1] if numbered else None
