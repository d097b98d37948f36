"""The report view model: frozen records of strings (and the check rows themselves) that every
renderer lays out."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Final, Literal

from pytest_modelprof.baseline.check import Check

STATUS_LABELS: Final[dict[str, tuple[str, str]]] = {
    "regressed": ("regressed", "\u274c"),
    "missing": ("no baseline", "\u26a0\ufe0f"),
    "error": ("error", "\u274c"),
    "warning": ("warning", "\u26a0\ufe0f"),
    "improved": ("improved", "\U0001f7e2"),
    "updated": ("baseline updated", "\U0001f504"),
    "new": ("new baseline", "\U0001f195"),
    "ok": ("ok", "\u2705"),
}



MAX_LAYER_ROWS: Final = 100



CHART_LAYERS: Final = 12



Align = Literal["start", "middle", "end"]



@dataclass(frozen=True)
class Fact:
    """A labelled fact of the run or a test, with an optional link."""

    label: str
    value: str
    href: str = ""



@dataclass(frozen=True)
class StatusCount:
    """How many profiles have one status."""

    status: str
    label: str
    count: str
    css: str
    glyph: str



@dataclass(frozen=True)
class MetricRow:
    """One check of one test as the tables lay it out: the row itself (no copied fields), its
    texts under the table's column names."""

    check: Check

    @property
    def label(self) -> str:
        return self.check.label

    @property
    def baseline(self) -> str:
        return self.check.baseline_text

    @property
    def current(self) -> str:
        return self.check.current_text

    @property
    def delta(self) -> str:
        return self.check.delta_text

    @property
    def limit(self) -> str:
        return self.check.limit or "\u2013"

    @property
    def verdict(self) -> str:
        return self.check.verdict

    @property
    def css(self) -> str:
        return f"v-{self.check.verdict}"

    @property
    def reason(self) -> str:
        return self.check.reason

    @property
    def kind(self) -> str:
        return self.check.kind



@dataclass(frozen=True)
class Cell:
    """A table cell with the value its column sorts by (a number as text, or the text)."""

    text: str
    sort: str
    css: str = ""



@dataclass(frozen=True)
class LayerRow:
    """One layer that changed."""

    cells: tuple[Cell, ...]
    css: str



@dataclass(frozen=True)
class LayerTable:
    """The per-layer diff: the layers that changed, biggest FLOPs change first."""

    headers: tuple[Cell, ...]  # ``sort`` is "num" or "text": how the column sorts
    rows: tuple[LayerRow, ...]
    note: str



@dataclass(frozen=True)
class SvgRect:
    x: str
    y: str
    width: str
    height: str
    css: str
    title: str



@dataclass(frozen=True)
class SvgText:
    x: str
    y: str
    text: str
    css: str = ""
    anchor: Align = "start"
    title: str = ""



@dataclass(frozen=True)
class SvgLine:
    x1: str
    y1: str
    x2: str
    y2: str
    css: str



@dataclass(frozen=True)
class SvgCircle:
    cx: str
    cy: str
    r: str
    css: str
    title: str



@dataclass(frozen=True)
class SvgPolyline:
    points: str
    css: str



@dataclass(frozen=True)
class LegendItem:
    css: str
    label: str



@dataclass(frozen=True)
class Chart:
    """An inline SVG chart in a ``0 0 width height`` view box; ``empty`` says why it has no data."""

    title: str
    caption: str
    width: str
    height: str
    legend: tuple[LegendItem, ...] = ()
    rects: tuple[SvgRect, ...] = ()
    lines: tuple[SvgLine, ...] = ()
    polylines: tuple[SvgPolyline, ...] = ()
    circles: tuple[SvgCircle, ...] = ()
    texts: tuple[SvgText, ...] = ()
    empty: str = ""
    css: str = ""  # a class of its own beside "chart" ("stack": a stacked bar)



@dataclass(frozen=True)
class Summary:
    """One row of the overview table (HTML) and of the Markdown summary."""

    anchor: str
    label: str
    model: str
    status: str
    status_label: str
    glyph: str
    css: str
    cells: tuple[str, ...]  # one per summary metric: "1.3 MFLOPs (+30.0 %)"
    headline: str
    # ``label`` cut after its separators (``/``, ``::``, ``[``, ``-``, ``_``): where a long test
    # id may wrap, so it never breaks inside a word.
    label_parts: tuple[str, ...] = ()



@dataclass(frozen=True)
class Section:
    """Everything the report shows about one profiled test."""

    summary: Summary
    location: str
    facts: tuple[Fact, ...]
    metrics: tuple[MetricRow, ...]
    layers: LayerTable
    charts: tuple[Chart, ...]
    notes: tuple[str, ...]
    problems: tuple[str, ...]  # one line per failed limit, with its figures
    # (name, type, "+300 KFLOPs"): the layers that grew most, from the row's detail["layers"]
    # (the failure text names the same), under ``top_layers_title`` ("Layers whose memory ...").
    top_layers: tuple[tuple[str, str, str], ...]
    warnings: tuple[str, ...] = ()  # one line per limit that warns (latency without strict)
    top_layers_title: str = ""
    # Lists a row's detail carries, by kind: ("Graph breaks (2)", ("model.py:12: ...", ...)).
    details: tuple[tuple[str, tuple[str, ...]], ...] = ()
    # A stacked bar per group of rows that are parts of one total (``detail["stack"]``).
    stacks: tuple[Chart, ...] = ()



@dataclass(frozen=True)
class ReportView:
    """The whole report: the run, counts by status, and one section per profile."""

    title: str
    facts: tuple[Fact, ...]
    counts: tuple[StatusCount, ...]
    count_line: str
    summary_headers: tuple[str, ...]
    sections: tuple[Section, ...]
    empty: str
    artifact_url: str = ""
    environment: str = ""
    """One line when baselines come from another environment (see ``report.summary``)."""
    generator: str = field(default="pytest-modelprof")
