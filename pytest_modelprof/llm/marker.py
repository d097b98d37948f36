"""The marker's ``llm={"prompt": 512, "context": 4096, "batch": 1}``, checked (standard library).

``context`` may be a list (``[1024, 4096, 16384]``): the serving costs are those of the longest,
and the decode FLOPs per token are fitted against the context (a growth exponent).
"""

from __future__ import annotations

from typing import Any, Final

from pytest_modelprof.errors import SettingsError

__all__ = ["parse_llm"]

#: What ``llm=`` may set, with the defaults of :func:`~pytest_modelprof.llm.profile_llm`.
LLM_KEYS: Final = {"prompt": 512, "context": 4096, "batch": 1, "allow_longer": False}


def parse_llm(value: object, source: str) -> tuple[tuple[str, Any], ...] | None:
    """``llm=`` as sorted ``(key, value)`` pairs (hashable, as a request must be), or None."""
    if value is None:
        return None
    example = 'llm={"prompt": 512, "context": 4096, "batch": 1}'
    if not isinstance(value, dict):
        raise SettingsError(f"{source}: llm={value!r} is not a dict; write e.g. {example}")
    out: dict[str, Any] = {}
    for key, raw in value.items():
        if key not in LLM_KEYS:
            raise SettingsError(
                f"{source}: llm= has no key {key!r}; it takes {', '.join(LLM_KEYS)} ({example})"
            )
        least = 2 if key == "context" else 1
        if key == "context" and isinstance(raw, (list, tuple)):
            out[key] = _contexts(raw, source)
            continue
        if key == "allow_longer":
            if not isinstance(raw, bool):
                raise SettingsError(f"{source}: llm['allow_longer']={raw!r} must be True or False")
        elif isinstance(raw, bool) or not isinstance(raw, int) or raw < least:
            raise SettingsError(f"{source}: llm[{key!r}]={raw!r} must be an integer >= {least}")
        out[key] = raw
    return tuple(sorted(out.items()))


def _contexts(raw: list[Any] | tuple[Any, ...], source: str) -> tuple[int, ...]:
    """A context sweep (for the decode growth exponent): two or more distinct integers >= 2."""
    values = sorted(set(raw)) if all(_whole(v) for v in raw) else []
    if len(values) < 2 or values[0] < 2:
        raise SettingsError(
            f"{source}: llm['context']={list(raw)!r} is not a context sweep; give two or more "
            "distinct integers >= 2, e.g. [1024, 4096, 16384]"
        )
    return tuple(values)


def _whole(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)
