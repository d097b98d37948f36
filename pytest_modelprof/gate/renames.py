"""Renamed tests: a profile without a baseline matched with the stale baseline it left behind."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from pytest_modelprof.results.record import ProfileResult

__all__ = ["inputs_identity", "renamed"]


def inputs_identity(model: str, inputs: Iterable[Mapping[str, object]]) -> str:
    """``"SmallCNN 1×3×16×16 float32"``: what a profile measured, to match a renamed test's
    missing baseline with the stale one it left behind (``inputs`` as stored in JSON)."""
    shown = []
    for spec in inputs:
        shape = spec.get("shape")
        dims = "\u00d7".join(str(d) for d in shape) if isinstance(shape, list) else "?"
        name = f"{spec['name']}=" if spec.get("name") else ""
        shown.append(f"{name}{dims} {spec.get('dtype')}")
    return f"{model} {', '.join(shown)}"


def renamed(
    records: Sequence[ProfileResult], stale: Mapping[str, str]
) -> list[tuple[ProfileResult, str]]:
    """(test without a baseline, stale baseline) pairs that hold the same model and inputs,
    each stale file used once; ``stale`` maps a stale file to its :func:`inputs_identity`."""
    free = dict(stale)
    pairs = []
    for r in sorted(records, key=lambda r: r.label):
        if r.status != "missing" or r.profile is None:
            continue
        inputs = [spec.model_dump(mode="json") for spec in r.profile.inputs]
        identity = inputs_identity(r.model, inputs)
        match = next((path for path, ident in free.items() if ident == identity), None)
        if match is not None:
            pairs.append((r, match))
            del free[match]
    return pairs
