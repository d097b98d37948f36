"""The one check row: :class:`Check`, its verdicts and which of them fail.

Every limit the gate knows (a relative delta, an absolute budget, latency, a growth exponent,
the fvcore cross-check, uncounted ops, the capture mode, compile health) ends as a
:class:`Check`: the metric, the
kind of limit, baseline, current, delta, the limit, a verdict and a one-line reason with the
figures, plus a JSON detail for the report sections of that kind. The same type travels from the
judge through the gate's record and the results file to every renderer; renderers read rows only.

Verdicts:

* ``ok`` - within its limit;
* ``improved`` - better than the baseline by more than the tolerance (fails only with
  ``fail_on_improvement``);
* ``regressed`` - worse than the limit allows: the test fails;
* ``warning`` - outside the limit, but not a failure (an undecided latency slowdown, or any
  with ``timing_verdicts='warn'``; compile time unless ``timing_verdicts='fail'``; a
  kernel-dependent count whose baseline was recorded in another environment);
* ``unmeasured`` - a limit is set, but the figure is missing (now, or in the baseline): fails;
* ``new`` - measured now, absent from the baseline (or no baseline at all);
* ``missing`` - in the baseline, not measured now.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any, ClassVar, Final, Literal

from pytest_modelprof.baseline.change import DASH, relative_change

__all__ = ["Verdict", "FAILING", "Check"]

Verdict = Literal["ok", "improved", "regressed", "warning", "unmeasured", "new", "missing"]
#: What a limit is: a relative ``delta`` or an absolute ``budget`` of a table metric, or one of
#: the checks that have their own rule.
CheckKind = Literal[
    "delta", "budget", "latency", "growth", "fvcore", "uncounted", "capture", "compile"
]
#: Verdicts that fail the test.
FAILING: Final[frozenset[Verdict]] = frozenset({"regressed", "unmeasured"})


@dataclass(frozen=True)
class Check:
    """One limit's verdict with everything a message or a report row needs, already formatted.

    The one row type: the judge makes it, the gate's record and the results file hold it (its
    JSON is the results document's ``checks`` entries) and every renderer reads it.

    ``reason`` holds the figures (``1.82 GFLOPs -> 2.10 GFLOPs (+15.4 %, limit +10.0 %)``), so a
    row read back from JSON renders without the metric table (a metric registered by a plugin,
    say). ``hard`` marks limits that rewriting the baseline cannot fix (budgets, growth,
    fvcore, a limit nothing measured, uncounted ops under ``fail_on_uncounted``), which fail in
    update mode too.
    """

    # A plain dataclass, so the plugin imports no pydantic until a profile is judged; pydantic
    # validates it (extra fields refused) where a record or a results file is read.
    __pydantic_config__: ClassVar[dict[str, str]] = {"extra": "forbid"}

    metric: str  # a metric name (flops, params, ...) or a check's own (fvcore_macs, ...)
    label: str
    kind: CheckKind
    verdict: Verdict
    reason: str
    current: float | None = None
    baseline: float | None = None
    limit: str = ""
    current_text: str = DASH
    baseline_text: str = DASH
    delta_text: str = DASH
    hard: bool = False
    summary: bool = False  # a column of the summary tables
    detail: Mapping[str, Any] = field(default_factory=dict)

    @property
    def change(self) -> float | None:
        """Signed relative change ``(current - baseline) / baseline`` (``inf`` from zero)."""
        return relative_change(self.current, self.baseline)

    @property
    def failed(self) -> bool:
        """Whether this row fails the test."""
        return self.verdict in FAILING

    def describe(self) -> str:
        """One line: ``FLOPs: 1.82 GFLOPs -> 2.1 GFLOPs (+15.4 %, limit max_flops_delta=+10 %)``."""
        return f"{self.label}: {self.reason}"

    def to_json(self) -> dict[str, Any]:
        """The row as a JSON object (the results document's ``checks`` entries)."""
        data = {f.name: getattr(self, f.name) for f in fields(self)}
        return {**data, "detail": dict(self.detail)}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Check:
        """The inverse of :meth:`to_json`, validated as a results file's rows are."""
        from pydantic import TypeAdapter

        row: Check = TypeAdapter(cls).validate_python(
            {**data, "detail": dict(data.get("detail") or {})}
        )
        return row

