"""What the gate does with a timing result: ok, warn or fail; and which rounds a baseline keeps."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError

from pytest_modelprof.runtime.noise import (
    DEFAULT_ALPHA,
    DEFAULT_TOLERANCE,
    GateAction,
    GateDecision,
    LatencyComparison,
    NormalisedTiming,
    compare_timings,
)

__all__ = ["latency_gate", "timing_unchanged", "timing_to_store"]


def latency_gate(
    comparison: LatencyComparison | None,
    *,
    latency_ms: float | None = None,
    max_latency_ms: float | None = None,
    fast_ms: float | None = None,
    strict: bool | None = None,
) -> GateDecision:
    """ok / warn / fail for a timing result against the limits the user wrote.

    A decisive result beyond a limit fails: a ``regressed`` comparison (sure, at ``alpha``, of
    a slowdown beyond the tolerance), or a median over ``max_latency_ms`` whose fastest rounds
    (``fast_ms``, the least disturbed ones) are over it too. An undecided one only warns: an
    ``inconclusive`` comparison (a note) or a median over the budget that the fast rounds are
    not. ``strict=False`` keeps everything warn-only; ``strict=True`` also fails a budget the
    median alone is over.
    """
    reasons: list[str] = []
    notes: list[str] = []
    decisive = False
    if comparison is not None and comparison.verdict == "regressed":
        reasons.append(f"latency {comparison.describe()}")
        decisive = True
    if comparison is not None and comparison.verdict == "inconclusive":
        notes.append(f"latency not judged: {comparison.describe()}; the rounds were too noisy")
    if max_latency_ms is not None and latency_ms is not None and latency_ms > max_latency_ms:
        text = (
            f"latency {latency_ms:.4g} ms (median) is over the budget of {max_latency_ms:g} ms "
            f"({(latency_ms / max_latency_ms - 1) * 100:+.1f} %, measured on this runner)"
        )
        if fast_ms is not None and fast_ms > max_latency_ms:
            decisive = True
            text += f"; so are the fastest rounds ({fast_ms:.4g} ms)"
        elif fast_ms is not None:
            text += f"; the fastest rounds ({fast_ms:.4g} ms) are within it, so not decided"
        reasons.append(text)
    figures: dict[str, Any] = {}
    if comparison is not None:
        figures = {
            "verdict": comparison.verdict,
            "slowdown": comparison.slowdown,
            "confidence": comparison.confidence,
        }
    fails = strict is True or (strict is None and decisive)
    action: GateAction = "ok" if not reasons else ("fail" if fails else "warn")
    return GateDecision(action=action, reasons=reasons, notes=notes, **figures)


def timing_unchanged(
    baseline: NormalisedTiming,
    current: NormalisedTiming,
    tolerance: float = DEFAULT_TOLERANCE,
    *,
    alpha: float = DEFAULT_ALPHA,
) -> bool:
    """Whether ``current`` is not significantly different from ``baseline``.

    True for the verdicts ``unchanged`` and ``inconclusive``; False for ``regressed``,
    ``improved``, or when the two cannot be compared (another calibration version).
    """
    try:
        verdict = compare_timings(current, baseline, tolerance=tolerance, alpha=alpha).verdict
    except ValueError:
        return False
    return verdict in ("unchanged", "inconclusive")


def timing_to_store(
    stored: Mapping[str, Any] | None,
    current: NormalisedTiming | Mapping[str, Any],
    tolerance: float = DEFAULT_TOLERANCE,
    *,
    alpha: float = DEFAULT_ALPHA,
) -> dict[str, Any]:
    """The timing document an updated baseline should hold: ``stored`` itself while
    :func:`timing_unchanged`, else ``current`` as JSON.

    ``stored`` is returned as an equal plain dict (same keys, same values, same order), so a
    baseline rewritten with it is byte-identical. A missing or unreadable ``stored`` (an
    older calibration version, a hand-edited file) is replaced.
    """
    now = current if isinstance(current, NormalisedTiming) else NormalisedTiming.model_validate(
        current
    )
    fresh: dict[str, Any] = now.model_dump(mode="json")
    if stored is None:
        return fresh
    try:
        old = NormalisedTiming.model_validate(stored)
    except ValidationError:
        return fresh
    return dict(stored) if timing_unchanged(old, now, tolerance, alpha=alpha) else fresh
