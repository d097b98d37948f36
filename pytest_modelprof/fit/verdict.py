"""Does the step fit a device, with how much headroom, and the largest batch that fits.

The largest batch comes from a search over estimates, which cost no memory and seconds at
most: two estimates (batch ``b`` and ``2b``) give the line ``peak = fixed + per_sample x
batch``; its prediction is then checked with exact estimates at the predicted batch and the
next one, and a bisection between estimates takes over when the peak is not a straight line
in the batch (it is monotone: more samples never need less memory).
"""

from __future__ import annotations

from collections.abc import Callable

from pydantic import BaseModel, ConfigDict

__all__ = ["Fit", "fit_on"]

#: The search stops here: a batch this large that fits says "the batch is not the limit".
MAX_BATCH = 1 << 20


class Fit(BaseModel):
    """The verdict for one device: fits, headroom (negative: over by), the largest batch."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    device: str
    capacity_bytes: int
    fits: bool
    headroom_bytes: int
    largest_batch: int | None


def largest_batch(peak_at: Callable[[int], int], capacity: int, start: int = 1) -> int:
    """The largest batch whose peak fits ``capacity`` (0: none); ``peak_at`` is monotone in
    the batch and cached by the caller. The search starts at ``start``, a batch known to run
    (batch norm in training refuses a batch of 1)."""
    b = max(start, 1)
    p1 = peak_at(b)
    if p1 > capacity:
        return _bisect(peak_at, capacity, 0, b) if b > 1 else 0
    p2 = peak_at(2 * b)
    slope = (p2 - p1) / b
    if slope <= 0:
        return MAX_BATCH if peak_at(MAX_BATCH) <= capacity else _bisect(peak_at, capacity, b)
    guess = max(b, min(MAX_BATCH, b + int((capacity - p1) // slope)))
    lo = b  # fits
    if peak_at(guess) <= capacity:
        if guess == MAX_BATCH or peak_at(guess + 1) > capacity:
            return guess
        lo = guess + 1
        hi = min(MAX_BATCH, 2 * guess)
        while peak_at(hi) <= capacity and hi < MAX_BATCH:  # gallop up
            lo, hi = hi, min(MAX_BATCH, 2 * hi)
        if peak_at(hi) <= capacity:
            return hi
    else:
        hi = guess
    return _bisect(peak_at, capacity, lo, hi)


def _bisect(peak_at: Callable[[int], int], capacity: int, lo: int, hi: int = MAX_BATCH) -> int:
    """Largest batch in ``[lo, hi)`` that fits; ``lo`` fits (0 always does), ``hi`` does not.
    A batch the model refuses (batch norm's batch of 1 in training) counts as not fitting."""
    while hi - lo > 1:
        mid = (lo + hi) // 2
        try:
            fits = peak_at(mid) <= capacity
        except Exception:
            fits = False
        if fits:
            lo = mid
        else:
            hi = mid
    return lo


def fit_on(
    device: str,
    capacity: int,
    peak_bytes: int,
    peak_at: Callable[[int], int] | None,
    start: int = 1,
) -> Fit:
    """The verdict of a peak on one device; ``peak_at`` (None: no batch search) finds the
    largest batch."""
    best = largest_batch(peak_at, capacity, start) if peak_at is not None else None
    return Fit(
        device=device,
        capacity_bytes=capacity,
        fits=peak_bytes <= capacity,
        headroom_bytes=capacity - peak_bytes,
        largest_batch=best,
    )
