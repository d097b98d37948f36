"""The report's charts as SVG primitives in a fixed coordinate system (the template only draws)."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final

from pytest_modelprof.baseline.change import format_change
from pytest_modelprof.baseline.document import baseline_layers
from pytest_modelprof.report._format import (
    change_of,
    nice_ticks,
    num,
)
from pytest_modelprof.report.layers import (
    LayerDiff,
    layer_name,
)
from pytest_modelprof.report.model import (
    CHART_LAYERS,
    Chart,
    LegendItem,
    SvgCircle,
    SvgLine,
    SvgPolyline,
    SvgRect,
    SvgText,
)
from pytest_modelprof.results.record import ProfileResult
from pytest_modelprof.schema import ModelProfile
from pytest_modelprof.textfit import cut_middle
from pytest_modelprof.units import format_bytes, format_count

if TYPE_CHECKING:
    from pytest_modelprof.baseline.document import BaselineDocument, BaselineOpFamily

LABEL_W: Final = 190.0



BAR_W: Final = 280.0



CHART_W: Final = 640.0



def decade_label(exponent: int, unit: str) -> str:
    return format_count(10.0**exponent, unit)



def layer_chart(result: ProfileResult, diffs: Sequence[LayerDiff]) -> Chart:
    title = "Per-layer FLOPs: baseline vs current"
    legend = (LegendItem("bar-base", "baseline"), LegendItem("bar-up", "grew"),
              LegendItem("bar-down", "shrank"), LegendItem("bar-same", "unchanged"))
    picked: list[tuple[str, str, int, int]] = []
    for d in diffs:
        if d.delta("flops") != 0 and len(picked) < CHART_LAYERS:
            picked.append((d.name, d.type, d.value("flops", "before"), d.value("flops", "after")))
    if not picked:
        # No layer's FLOPs changed (the row says so), so a layer the baseline has holds the
        # same FLOPs there; the profile's largest layers are drawn, nothing is diffed here.
        current = baseline_layers(result.profile) if result.profile is not None else []
        biggest = sorted(current, key=lambda r: (-r.flops, r.name))[:CHART_LAYERS]
        same = result.baseline is not None
        for row in biggest:
            picked.append((row.name, row.type, row.flops if same else 0, row.flops))
        caption = "No layer's FLOPs changed; the largest layers are shown."
    else:
        caption = (
            f"The {len(picked)} layers whose FLOPs changed most, baseline (grey) above current."
        )
    if result.baseline is None:
        caption = "No baseline yet: current FLOPs of the largest layers."
    picked = [p for p in picked if p[2] or p[3]]
    if not picked:
        return Chart(title, "", num(CHART_W), "60", legend, empty="No layer has FLOPs.")
    row_h, top = 30.0, 8.0
    height = top + row_h * len(picked) + 8
    scale = max(max(b, a) for _, _, b, a in picked) or 1
    rects, texts = [], []
    for i, (name, kind, b, a) in enumerate(picked):
        y = top + i * row_h
        label = f"{layer_name(name)} ({kind})"
        texts.append(SvgText(num(LABEL_W - 8), num(y + 17), cut_middle(layer_name(name), 30),
                             "label", "end", label))
        css = "bar-up" if a > b else ("bar-down" if a < b else "bar-same")
        if result.baseline is not None:
            rects.append(SvgRect(num(LABEL_W), num(y + 3), num(max(BAR_W * b / scale, 0.5)),
                                 "10", "bar-base",
                                 f"{label}: baseline {format_count(b, 'FLOPs')}"))
        rects.append(SvgRect(num(LABEL_W), num(y + 14), num(max(BAR_W * a / scale, 0.5)),
                             "10", css, f"{label}: current {format_count(a, 'FLOPs')}"))
        value = format_count(a, "FLOPs")
        if result.baseline is not None and a != b:
            value += " (new)" if b == 0 else (
                " (removed)" if a == 0 else f" ({format_change(change_of(a, b))})"
            )
        texts.append(SvgText(num(LABEL_W + max(BAR_W * max(a, b) / scale, 0.5) + 6),
                             num(y + 21), value, "value"))
    return Chart(title, caption, num(CHART_W), num(height), legend, tuple(rects), (), (), (),
                 tuple(texts))



def op_chart(profile: ModelProfile | None, baseline: BaselineDocument | None = None) -> Chart:
    """Each op family's FLOPs and bytes moved, baseline above current where the baseline
    recorded its families; the current shares otherwise."""
    before = {f.family: f for f in (baseline.op_families or [])} if baseline is not None else {}
    if profile is not None and profile.op_breakdown and before:
        return _op_diff_chart(profile, before)
    title = "Op-family breakdown (current)"
    legend = (LegendItem("bar-flops", "share of FLOPs"), LegendItem("bar-mem", "share of memory"))
    families = sorted(profile.op_breakdown, key=lambda f: (-f.flops, -f.traffic, f.family)) \
        if profile is not None else []
    if not families:
        return Chart(title, "", num(CHART_W), "60", legend,
                     empty="This profile has no op-family breakdown.")
    total_flops = sum(f.flops for f in families) or 1
    total_mem = sum(f.traffic for f in families) or 1
    row_h, top = 30.0, 8.0
    height = top + row_h * len(families) + 8
    rects, texts = [], []
    for i, fam in enumerate(families):
        y = top + i * row_h
        fs, ms = fam.flops / total_flops, fam.traffic / total_mem
        texts.append(SvgText(num(LABEL_W - 8), num(y + 17), cut_middle(fam.family, 30), "label",
                             "end",
                             f"{fam.family}: {fam.count} ops"))
        rects.append(SvgRect(num(LABEL_W), num(y + 3), num(max(BAR_W * fs, 0.5)), "10",
                             "bar-flops",
                             f"{fam.family}: {format_count(fam.flops, 'FLOPs')} "
                             f"({fs * 100:.1f} % of FLOPs)"))
        rects.append(SvgRect(num(LABEL_W), num(y + 14), num(max(BAR_W * ms, 0.5)), "10",
                             "bar-mem",
                             f"{fam.family}: {format_bytes(fam.traffic)} ({ms * 100:.1f} % of "
                             f"memory traffic)"))
        texts.append(SvgText(num(LABEL_W + BAR_W * max(fs, ms) + 6), num(y + 21),
                             f"{fs * 100:.1f} % \u00b7 {ms * 100:.1f} %", "value"))
    caption = (
        f"{len(families)} op families; {format_count(total_flops, 'FLOPs')} and "
        f"{format_bytes(total_mem)} moved in all."
    )
    if baseline is not None:
        caption += " The baseline did not record its op families: re-record it to compare."
    return Chart(title, caption, num(CHART_W), num(height), legend, tuple(rects), (), (), (),
                 tuple(texts))


def _versus(now: int, was: int, fmt: Callable[[float], str]) -> str:
    """``36 MFLOPs (+0.4 %)``, ``(new)``, ``(gone)``; the figure alone when unchanged."""
    if now == was:
        return fmt(now)
    if was == 0:
        return f"{fmt(now)} (new)"
    return f"{fmt(now)} ({format_change(change_of(now, was))})"


def _op_diff_chart(profile: ModelProfile, before: Mapping[str, BaselineOpFamily]) -> Chart:
    """Per op family: FLOPs baseline and current, bytes baseline and current, and the calls."""
    title = "Op families: baseline vs current"
    legend = (LegendItem("bar-base", "baseline"), LegendItem("bar-flops", "FLOPs (current)"),
              LegendItem("bar-mem", "traffic (current)"))
    after = {f.family: f for f in profile.op_breakdown}
    rows = []
    for name in set(after) | set(before):
        a, b = after.get(name), before.get(name)
        rows.append((name, a.count if a else 0, b.count if b else 0, a.flops if a else 0,
                     b.flops if b else 0, a.traffic if a else 0, b.traffic if b else 0))
    # What changed first (the larger relative change in bytes or FLOPs), then the largest.
    def moved(r: tuple[str, int, int, int, int, int, int]) -> float:
        return max(abs(change_of(r[3], r[4]) or 0), abs(change_of(r[5], r[6]) or 0),
                   float(r[1] != r[2]))

    rows.sort(key=lambda r: (-min(moved(r), 1e9), -r[3], -r[5], r[0]))
    max_flops = max(max(r[3], r[4]) for r in rows) or 1
    max_mem = max(max(r[5], r[6]) for r in rows) or 1
    row_h, top = 46.0, 8.0
    rects, texts = [], []
    for i, (name, calls, calls_was, fl, fl_was, mem, mem_was) in enumerate(rows):
        y = top + i * row_h
        texts.append(SvgText(num(LABEL_W - 8), num(y + 17), cut_middle(name, 30), "label", "end",
                             name))
        calls_text = f"\u00d7{calls}" if calls == calls_was else (
            f"\u00d7{calls_was} \u2192 \u00d7{calls}"
        )
        texts.append(SvgText(num(LABEL_W - 8), num(y + 32), calls_text + " calls", "value", "end"))
        for dy, value, was, css, fmt, scale in (
            (2.0, fl, fl_was, "bar-flops", lambda v: format_count(v, "FLOPs"), max_flops),
            (23.0, mem, mem_was, "bar-mem", format_bytes, max_mem),
        ):
            rects.append(SvgRect(num(LABEL_W), num(y + dy), num(max(BAR_W * was / scale, 0.5)),
                                 "8", "bar-base", f"{name}: baseline {fmt(was)}"))
            rects.append(SvgRect(num(LABEL_W), num(y + dy + 9),
                                 num(max(BAR_W * value / scale, 0.5)), "8", css,
                                 f"{name}: current {fmt(value)}"))
            x = LABEL_W + BAR_W * max(value, was) / scale + 6
            texts.append(SvgText(num(x), num(y + dy + 15), _versus(value, was, fmt), "value"))
    changed = sum(1 for r in rows if moved(r) > 0)
    caption = (
        f"{changed} of {len(rows)} op families changed; per family FLOPs (blue) and bytes "
        f"moved (orange), the baseline's in grey above each."
    )
    return Chart(title, caption, num(CHART_W), num(top + row_h * len(rows) + 8), legend,
                 tuple(rects), (), (), (), tuple(texts))



def roofline_chart(result: ProfileResult) -> Chart:
    title = "Roofline: arithmetic intensity against the machine balance"
    legend = (LegendItem("pt-compute", "compute-bound layer"),
              LegendItem("pt-memory", "memory-bound layer"),
              LegendItem("pt-base", "baseline layer"),
              LegendItem("ai-model", "whole model (current)"),
              LegendItem("ai-base", "whole model (baseline)"))
    profile = result.profile
    if profile is None:
        return Chart(title, "", num(CHART_W), "60", legend, empty="No profile to plot.")
    machine = profile.machine
    balance = machine.balance
    current = [(lay.arithmetic_intensity, lay.flops, lay.name, lay.type, lay.bottleneck)
               for lay in profile.layers if lay.arithmetic_intensity > 0 and lay.flops > 0]
    baseline = [(row.flops / row.traffic, row.flops, row.name, row.type)
                for row in (result.baseline.layers if result.baseline else [])
                if row.flops > 0 and row.traffic > 0]
    model_ai = profile.arithmetic_intensity
    base_ai = result.baseline.metrics.get("intensity") if result.baseline else None
    values = [v[0] for v in current] + [v[0] for v in baseline] + [balance]
    values += [v for v in (model_ai, base_ai) if v]
    lo = math.floor(math.log10(min(values))) - (1 if min(values) == balance else 0)
    hi = math.ceil(math.log10(max(values))) + (1 if max(values) == balance else 0)
    if hi - lo < 2:
        lo, hi = lo - 1, hi + 1
    peak, bw = machine.peak_flops, machine.bandwidth
    y_hi = math.ceil(math.log10(peak)) + 0.0
    y_lo = math.floor(math.log10(min(peak, bw * 10.0**lo)))
    left, right, top, bottom = 84.0, CHART_W - 20.0, 14.0, 250.0

    def px(ai: float) -> float:
        return left + (math.log10(ai) - lo) / (hi - lo) * (right - left)

    def py(perf: float) -> float:
        return bottom - (math.log10(perf) - y_lo) / (y_hi - y_lo) * (bottom - top)

    def roof(ai: float) -> float:
        return min(peak, ai * bw)

    lines: list[SvgLine] = [
        SvgLine(num(left), num(bottom), num(right), num(bottom), "axis"),
        SvgLine(num(left), num(top), num(left), num(bottom), "axis"),
    ]
    texts: list[SvgText] = []
    for e in range(lo, hi + 1):
        x = px(10.0**e)
        lines.append(SvgLine(num(x), num(top), num(x), num(bottom), "grid"))
        texts.append(SvgText(num(x), num(bottom + 16), decade_label(e, ""), "tick", "middle"))
    for e in range(int(y_lo), int(y_hi) + 1):
        y = py(10.0**e)
        lines.append(SvgLine(num(left), num(y), num(right), num(y), "grid"))
        texts.append(SvgText(num(left - 6), num(y + 4), decade_label(e, "FLOP/s"), "tick",
                             "end"))
    ridge_x = px(balance)
    lines.append(SvgLine(num(ridge_x), num(top), num(ridge_x), num(bottom), "ridge"))
    ridge = f"balance {format_count(balance)} FLOPs/B ({machine.name})"
    texts.append(SvgText(num(ridge_x + 4), num(bottom - 6), ridge, "ridge-label"))
    for ai, css in ((base_ai, "ai-base"), (model_ai, "ai-model")):
        if ai:
            x = px(ai)
            lines.append(SvgLine(num(x), num(top), num(x), num(bottom), css))
    points = [10.0**lo, balance, 10.0**hi]
    polyline = SvgPolyline(" ".join(f"{num(px(a))},{num(py(roof(a)))}" for a in points), "roof")
    texts.append(SvgText(num((left + right) / 2), num(bottom + 34),
                         "arithmetic intensity (FLOPs/B, log scale)", "axis-label", "middle"))
    total = sum(v[1] for v in current) or 1
    circles: list[SvgCircle] = []
    for ai, flops, name, kind in sorted(baseline, key=lambda v: -v[1]):
        circles.append(SvgCircle(num(px(ai)), num(py(roof(ai))),
                                 num(2.5 + 7.0 * math.sqrt(flops / total)), "pt-base",
                                 f"baseline {layer_name(name)} ({kind}): {ai:.3g} FLOPs/B, "
                                 f"{format_count(flops, 'FLOPs')}"))
    for ai, flops, name, kind, bound in sorted(current, key=lambda v: -v[1]):
        css = "pt-compute" if bound == "compute-bound" else "pt-memory"
        circles.append(SvgCircle(num(px(ai)), num(py(roof(ai))),
                                 num(2.5 + 7.0 * math.sqrt(flops / total)), css,
                                 f"{layer_name(name)} ({kind}): {ai:.3g} FLOPs/B, "
                                 f"{format_count(flops, 'FLOPs')}, {bound}"))
    memory_bound = sum(1 for v in current if v[4] != "compute-bound")
    caption = (
        f"Each layer sits on the roof min(peak, intensity \u00d7 bandwidth) of {machine.name}; "
        f"circle area \u221d FLOPs. {memory_bound} of {len(current)} layers are left of the "
        f"ridge (memory-bound). Whole model: {model_ai:.3g} FLOPs/B"
        + (f" (baseline {base_ai:.3g})." if base_ai else ".")
    )
    return Chart(title, caption, num(CHART_W), "300", legend, (), tuple(lines), (polyline,),
                 tuple(circles), tuple(texts))



def timing_chart(result: ProfileResult) -> Chart | None:
    """Per-round model times, baseline above current: whiskers min-max, box q1-q3, median."""
    if result.timing is None or "paired" in result.timing:
        return None  # paired rounds: the row says base and head; no stored rounds to draw
    title = "Latency distribution (model time per round)"
    legend = (LegendItem("bar-base", "baseline"), LegendItem("bar-flops", "current"))
    rows: list[tuple[str, dict[str, Any]]] = []
    base_timing = result.baseline.timing if result.baseline is not None else None
    if base_timing is not None:
        rows.append(("baseline", base_timing))
    rows.append(("current", result.timing))
    samples = [float(v) for _, t in rows for v in t["model"]["samples"]]
    if not samples:
        return Chart(title, "", num(CHART_W), "60", legend, empty="No timing rounds recorded.")
    # The axis runs to the far fence of the rounds (q3 + 3 IQR, at least 1.25 x the median), not
    # to the slowest round: one round of a busy machine would squeeze the rest into a corner.
    fence = max(max(t["model"]["q3"] + 3 * (t["model"]["q3"] - t["model"]["q1"]),
                    1.25 * t["model"]["median"]) for _, t in rows)
    slowest = max(samples)
    ticks = nice_ticks(0.0, min(slowest, fence) * 1.05 or 1.0)
    top_ms = ticks[-1]  # the axis ends on a round tick
    beyond = sum(1 for v in samples if v > top_ms)
    left, right, row_h, top = LABEL_W, CHART_W - 30.0, 44.0, 10.0
    axis_y = top + row_h * len(rows) + 4

    def x(ms: float) -> float:
        return left + min(ms, top_ms) / top_ms * (right - left)  # beyond the axis: at its end

    rects, lines, circles, texts = [], [], [], []
    lines.append(SvgLine(num(left), num(axis_y), num(right), num(axis_y), "axis"))
    for ms in ticks:
        lines.append(SvgLine(num(x(ms)), num(top), num(x(ms)), num(axis_y), "grid"))
        texts.append(SvgText(num(x(ms)), num(axis_y + 14), f"{ms:g} ms", "tick", "middle"))
    for i, (label, t) in enumerate(rows):
        m = t["model"]
        y = top + i * row_h + row_h / 2
        css = "bar-base" if label == "baseline" else "bar-flops"
        texts.append(SvgText(num(left - 8), num(y + 4), label, "label", "end",
                             f"{label}: {m['rounds']} rounds, median {m['median']:.3g} ms"))
        lines.append(SvgLine(num(x(m["min"])), num(y), num(x(m["max"])), num(y), "axis"))
        rects.append(SvgRect(num(x(m["q1"])), num(y - 8), num(max(x(m["q3"]) - x(m["q1"]), 1)),
                             "16", css, f"{label}: q1 {m['q1']:.3g} ms, q3 {m['q3']:.3g} ms"))
        lines.append(SvgLine(num(x(m["median"])), num(y - 10), num(x(m["median"])),
                             num(y + 10), "ai-model"))
        for j, v in enumerate(m["samples"]):
            circles.append(SvgCircle(num(x(float(v))), num(y + 14 + (j % 3) * 2), "1.3",
                                     "pt-base", f"{label} round {j + 1}: {float(v):.3g} ms"))
    change = ""
    if base_timing is not None and base_timing.get("normalised"):
        delta = result.timing["normalised"] / base_timing["normalised"] - 1
        change = f" ({format_change(delta)})"
    caption = (
        f"{result.timing['rounds']} rounds; calibration-normalised, fastest "
        f"{result.timing['quantile'] * 100:.0f} %: current {result.timing['normalised']:.4g}"
        + (f", baseline {base_timing['normalised']:.4g}" if base_timing is not None else "")
        + change
        + ". The gate compares the normalised rounds, not these raw times."
        + (f" {beyond} slow round{'s' if beyond > 1 else ''} beyond the axis (slowest "
           f"{slowest:.3g} ms) {'are' if beyond > 1 else 'is'} drawn at its end."
           if beyond else "")
    )
    height = axis_y + 22
    return Chart(title, caption, num(CHART_W), num(height), legend, tuple(rects), tuple(lines),
                 (), tuple(circles), tuple(texts))



SWEEP_METRICS: Final = (
    ("flops", "FLOPs", "sw-flops"),
    ("peak_activation_bytes", "peak activations", "sw-peak"),
    ("latency_ms", "latency", "sw-latency"),
    # estimated at each point only for a memory growth limit (runtime.sweep's ``extra``)
    ("train_memory", "train memory", "sw-train"),
    ("inference_memory", "inference memory", "sw-inference"),
)



def sweep_charts(result: ProfileResult) -> list[Chart]:
    """One log-log chart per swept axis: each metric relative to its first point."""
    if result.sweep is None:
        return []
    charts = []
    left, right, top, bottom = 84.0, CHART_W - 20.0, 14.0, 230.0
    for series in result.sweep.get("series", []):
        axis, values, points = series["axis"], series["values"], series["points"]
        fits = series.get("fits", {})
        title = f"Growth over {axis} (log-log, relative to {axis}={values[0]})"
        curves: list[tuple[str, str, str, list[float]]] = []
        for key, label, css in SWEEP_METRICS:
            ys = [p.get(key, (p.get("extra") or {}).get(key)) for p in points]
            if all(isinstance(v, (int, float)) and v > 0 for v in ys):
                fit = fits.get(key)
                shown = f"{label} ^{fit['exponent']:.2f}" if fit else label
                curves.append((css, shown, key, [float(v) / float(ys[0]) for v in ys]))
        if len(values) < 2 or not curves:
            charts.append(Chart(title, "", num(CHART_W), "60", (),
                                empty="Not enough positive points to plot."))
            continue
        x_span = math.log10(values[-1] / values[0]) or 1.0
        y_span = max(max(math.log10(r) for _, _, _, rs in curves for r in rs), x_span, 1e-9)

        def px(value: float, v0: float = values[0], span: float = x_span) -> float:
            return left + math.log10(value / v0) / span * (right - left)

        def py(ratio: float, span: float = y_span) -> float:
            return bottom - math.log10(ratio) / span * (bottom - top)

        lines = [
            SvgLine(num(left), num(bottom), num(right), num(bottom), "axis"),
            SvgLine(num(left), num(top), num(left), num(bottom), "axis"),
        ]
        texts = []
        for slope, css in ((1.0, "ai-base"), (2.0, "ridge")):
            end_log = min(x_span, y_span / slope)  # the reference line, clipped to the plot
            end_x = left + end_log / x_span * (right - left)
            end_y = bottom - slope * end_log / y_span * (bottom - top)
            lines.append(SvgLine(num(left), num(bottom), num(end_x), num(end_y), css))
            texts.append(SvgText(num(end_x - 4), num(end_y + 12), f"\u221d {axis}^{slope:g}",
                                 "ridge-label", "end"))
        for v in values:
            texts.append(SvgText(num(px(v)), num(bottom + 16), str(v), "tick", "middle"))
        polylines, circles = [], []
        for css, shown, _key, ratios in curves:
            pts = [(px(v), py(r)) for v, r in zip(values, ratios, strict=True)]
            polylines.append(SvgPolyline(" ".join(f"{num(a)},{num(b)}" for a, b in pts), css))
            for (a, b), v, r in zip(pts, values, ratios, strict=True):
                circles.append(SvgCircle(num(a), num(b), "3", css,
                                         f"{shown}: {axis}={v}: x{r:.3g}"))
        texts.append(SvgText(num((left + right) / 2), num(bottom + 32), axis, "tick", "middle"))
        legend = tuple(LegendItem(css, shown) for css, shown, _, _ in curves) + (
            LegendItem("ai-base", "linear"), LegendItem("ridge", "quadratic"))
        caption = "Exponents are least-squares slopes in log-log space; the gate bounds them."
        charts.append(Chart(title, caption, num(CHART_W), num(bottom + 40), legend, (),
                            tuple(lines), tuple(polylines), tuple(circles), tuple(texts)))
    return charts
