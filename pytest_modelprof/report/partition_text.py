"""The text report of a partition (``modelprof partition``): totals, kinds, stages, top-N."""

from __future__ import annotations

from pytest_modelprof.analysis.partition import PartitionReport
from pytest_modelprof.textfit import Column, layout_table
from pytest_modelprof.units import format_bytes, format_count

__all__ = ["render_partition_report"]


def render_partition_report(
    report: PartitionReport, *, top: int = 10, title: str = "", width: int = 100
) -> str:
    """The partition as plain text: totals, op-type counts, concurrency, critical path, top-N,
    in ``width`` columns (subgraph names and patterns cut in the middle)."""
    s = report
    lines: list[str] = []
    head = f"Partition of {title}" if title else "Partition"
    lines.append(f"{head}: {len(s.subgraphs)} subgraphs (machine {s.machine.name}, "
                 f"balance {s.machine.balance:.3g} FLOP/B)")
    lines.append("")
    lines.append(f"  FLOPs              {format_count(s.total_flops, 'FLOPs')}")
    unread = f"   (+{format_count(s.unread_params)} never read)" if s.unread_params else ""
    lines.append(f"  params             {format_count(s.total_params)}{unread}")
    lines.append(f"  traffic, unfused   {format_bytes(s.unfused_bytes)}"
                 f"   intensity {s.unfused_arithmetic_intensity:.3g} FLOP/B")
    saved = 1 - s.fused_bytes / s.unfused_bytes if s.unfused_bytes else 0.0
    lines.append(f"  traffic, fused     {format_bytes(s.fused_bytes)}"
                 f"   intensity {s.fused_arithmetic_intensity:.3g} FLOP/B  ({saved:.0%} less)")
    bound = sum(1 for g in s.subgraphs if g.bottleneck == "compute-bound")
    lines.append(f"  compute-bound      {bound} of {len(s.subgraphs)} subgraphs")
    lines.append("")
    lines.append("Subgraph kinds: " + ", ".join(f"{k} {v}" for k, v in s.kind_counts.items()))
    if s.depthwise_convs:
        lines.append(f"  depthwise convs: {s.depthwise_convs}")
    lines.append("Fusion patterns:")
    for pattern, count in s.pattern_counts.items():
        lines.append(f"  {count:5d}  {pattern}")
    c = s.concurrency
    lines.append("")
    lines.append(f"Concurrency: {c.num_stages} stages, at most {c.max_parallel} subgraphs in one "
                 f"stage, {c.mean_parallel:.2f} on average")
    cp = s.critical_path
    lines.append(f"Critical path: {len(cp.nodes)} subgraphs, "
                 f"{format_count(cp.flops, 'FLOPs')} ({cp.share:.1%} of all FLOPs)")
    by_id = {g.id: g for g in s.subgraphs}
    shown = cp.nodes if len(cp.nodes) <= 12 else cp.nodes[:6] + [-1] + cp.nodes[-5:]
    path = [
        ["", f"... {len(cp.nodes) - 11} more", ""] if i < 0
        else [f"#{by_id[i].id}", by_id[i].name, format_count(by_id[i].flops, "FLOPs")]
        for i in shown
    ]
    columns = [Column("step"), Column("subgraph"), Column("FLOPs", ">")]
    lines += layout_table(columns, path, width, shrink=((1, 12),), indent="  ").lines[1:]
    lines.append("")
    ranked = s.top(top)
    lines.append(f"Top {len(ranked)} subgraphs by FLOPs:")
    rows = []
    for g in ranked:
        p = g.parallelism
        par = f"{format_count(p.output_elements)} el" + (" depthwise" if p.depthwise else "")
        rows.append([str(g.id), g.name, g.pattern, format_count(g.flops, "FLOPs"),
                     format_bytes(g.memory), f"{g.arithmetic_intensity:.3g}",
                     g.bottleneck.split("-")[0], par])
    columns = [Column("id", ">"), Column("subgraph"), Column("pattern"), Column("FLOPs", ">"),
               Column("traffic", ">"), Column("intensity", ">"), Column("bound"),
               Column("parallelism", drop=0)]
    shrink = ((1, 20), (2, 16), (1, 12), (2, 10))
    lines += layout_table(columns, rows, width, shrink=shrink, indent="  ").lines
    return "\n".join(lines) + "\n"
