"""Growth exponents: ``metric ~ value ** k`` fitted by least squares in log-log space.

Linear growth fits 1, attention over sequence length fits 2. Pure and torch-free.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from pytest_modelprof.errors import MeasurementError
from pytest_modelprof.schema import Frozen

__all__ = ["GrowthFit", "fit_growth"]


class GrowthFit(Frozen):
    """``metric ~ value ** exponent``: least-squares slope in log-log space.

    ``tail_exponent`` is the slope between the last two points: where a mix of linear and
    quadratic terms is heading (an attention model's total fits between 1 and 2 and tends to 2).
    """

    exponent: float
    intercept: float
    r2: float
    tail_exponent: float | None
    points: int



def fit_growth(xs: Sequence[float], ys: Sequence[float]) -> GrowthFit:
    """Least-squares fit of ``log y = exponent * log x + intercept``; points with y <= 0 are
    left out (a metric that is zero somewhere has no power law there)."""
    pairs = [(math.log(x), math.log(y)) for x, y in zip(xs, ys, strict=True) if x > 0 and y > 0]
    n = len(pairs)
    if n < 2:
        raise MeasurementError(
            f"a growth fit needs at least 2 points with positive values, got {n}"
        )
    mx = math.fsum(p[0] for p in pairs) / n
    my = math.fsum(p[1] for p in pairs) / n
    sxx = math.fsum((p[0] - mx) ** 2 for p in pairs)
    if sxx == 0:
        raise MeasurementError("a growth fit needs at least 2 distinct axis values")
    sxy = math.fsum((p[0] - mx) * (p[1] - my) for p in pairs)
    slope = sxy / sxx
    intercept = my - slope * mx
    ss_tot = math.fsum((p[1] - my) ** 2 for p in pairs)
    ss_res = math.fsum((p[1] - (slope * p[0] + intercept)) ** 2 for p in pairs)
    r2 = 1.0 - ss_res / ss_tot if ss_tot > 0 else 1.0
    (x1, y1), (x2, y2) = pairs[-2], pairs[-1]
    tail = (y2 - y1) / (x2 - x1) if x2 != x1 else None
    return GrowthFit(exponent=slope, intercept=intercept, r2=r2, tail_exponent=tail, points=n)
