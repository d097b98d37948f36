"""What a scaling sweep measured: a point per axis value, a series per axis, and the gate.

:func:`check_growth` is the pure gate on a :class:`SweepResult`: ``max_flops_growth=1.1``
fails a change that turns linear growth quadratic.
"""

from __future__ import annotations

from collections.abc import Mapping

from pytest_modelprof.baseline.metrics import growth_fields
from pytest_modelprof.errors import SettingsError
from pytest_modelprof.runtime.growth_fit import GrowthFit
from pytest_modelprof.runtime.timing import TimingStats
from pytest_modelprof.schema import Frozen

__all__ = ["SweepPoint", "SweepSeries", "SweepResult", "check_growth"]


class SweepPoint(Frozen):
    """The model measured at one value of one axis."""

    axis: str
    value: int
    input_shapes: list[list[int]]
    params: int
    flops: int
    macs: int
    traffic: int
    peak_activation_bytes: int
    latency_ms: float | None = None
    latency: TimingStats | None = None
    # FLOPs by top-level child module ("(model)": ops of the model's own forward).
    module_flops: dict[str, int] = {}
    # Metrics measured by the caller's ``measure_more`` (the gate's memory estimates), by name.
    extra: dict[str, float] = {}

    def metric(self, name: str) -> float | None:
        """The value of a swept metric by name (``None`` if it was not measured)."""
        if name in self.extra:
            return float(self.extra[name])
        value = getattr(self, name, None)
        return None if value is None else float(value)



class SweepSeries(Frozen):
    """One axis swept, the others held at the base point."""

    axis: str
    values: list[int]
    points: list[SweepPoint]
    fits: dict[str, GrowthFit]
    module_fits: dict[str, GrowthFit]  # per top-level module, of its FLOPs only


class SweepResult(Frozen):
    """Every series of a sweep; ``base`` is the point the other axes were held at."""

    model: str
    base: dict[str, int]
    series: list[SweepSeries]

    def series_for(self, axis: str) -> SweepSeries:
        """The series of ``axis``; raises ``KeyError`` naming the swept axes."""
        for s in self.series:
            if s.axis == axis:
                return s
        swept = ", ".join(s.axis for s in self.series)
        raise SettingsError(f"{axis!r} was not swept; swept: {swept}")

    def exponent(self, axis: str, metric: str = "flops") -> float:
        """The fitted growth exponent of ``metric`` along ``axis``."""
        return self.series_for(axis).fits[metric].exponent


class GrowthViolation(Frozen):
    """A fitted exponent above its limit."""

    axis: str
    metric: str
    limit_key: str
    limit: float
    exponent: float
    message: str


def check_growth(
    result: SweepResult, limits: Mapping[str, float | None], *, slack: float = 0.0
) -> list[GrowthViolation]:
    """Every (axis, metric) whose fitted exponent exceeds its limit by more than ``slack``.

    ``limits`` maps growth limit names (:func:`~pytest_modelprof.baseline.metrics.
    growth_fields`) to a maximum exponent (``None``: no limit).
    No hidden slack by default: a limit of 1.1 means 1.1 (pass ``slack`` to allow curvature).
    """
    out: list[GrowthViolation] = []
    for key, limit in limits.items():
        if limit is None:
            continue
        fields = growth_fields()
        metric = fields.get(key)
        if metric is None:
            known = ", ".join(fields)
            raise SettingsError(f"unknown growth limit {key!r}; known: {known}")
        for series in result.series:
            fit = series.fits.get(metric)
            if fit is None or fit.exponent <= limit + slack:
                continue
            worst = max(series.module_fits.items(), key=lambda kv: kv[1].exponent, default=None)
            where = (
                f"; fastest-growing module {worst[0]!r} (exponent {worst[1].exponent:.2f})"
                if worst is not None and metric == "flops" else ""
            )
            out.append(GrowthViolation(
                axis=series.axis, metric=metric, limit_key=key, limit=limit,
                exponent=fit.exponent,
                message=(
                    f"{metric} grows as {series.axis}^{fit.exponent:.2f} over "
                    f"{series.values[0]}..{series.values[-1]}, above {key}={limit:g}{where}"
                ),
            ))
    return out
