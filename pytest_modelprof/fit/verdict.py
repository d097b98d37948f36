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

__all__ = ["Fit", "fit_on", "largest_batch"]

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
    """The largest batch whose peak fits ``capacity`` (0: not even batch 1); ``peak_at`` is
    monotone in the batch and cached by the caller."""
    if peak_at(1) > capacity:
        return 0
    lo = 1  # fits
    b = max(start, 1)
    p1, p2 = peak_at(b), peak_at(2 * b)
    slope = (p2 - p1) / b
    if slope <= 0:
        return MAX_BATCH if peak_at(MAX_BATCH) <= capacity else _bisect(peak_at, capacity, 1)
    guess = max(1, min(MAX_BATCH, b + int((capacity - p1) // slope)))
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
    while hi - lo > 1:  # invariant: lo fits, hi does not
        mid = (lo + hi) // 2
        if peak_at(mid) <= capacity:
            lo = mid
        else:
            hi = mid
    return lo


def _bisect(peak_at: Callable[[int], int], capacity: int, lo: int) -> int:
    hi = MAX_BATCH
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if peak_at(mid) <= capacity:
            lo = mid
        else:
            hi = mid
    return lo


def fit_on(
    device: str,
    capacity: int,
    peak_bytes: int,
    peak_at: Callable[[int], int] | None,
) -> Fit:
    """The verdict of a peak on one device; ``peak_at`` (None: no batch search) finds the
    largest batch."""
    best = largest_batch(peak_at, capacity) if peak_at is not None else None
    return Fit(
        device=device,
        capacity_bytes=capacity,
        fits=peak_bytes <= capacity,
        headroom_bytes=capacity - peak_bytes,
        largest_batch=best,
    )
