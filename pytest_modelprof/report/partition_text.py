"""The text report of a partition (``modelprof partition``): totals, kinds, stages, top-N."""

from __future__ import annotations

from pytest_modelprof.analysis.partition import PartitionReport
from pytest_modelprof.units import format_bytes, format_count

__all__ = ["render_partition_report"]


def render_partition_report(report: PartitionReport, *, top: int = 10, title: str = "") -> str:
    """The partition as plain text: totals, op-type counts, concurrency, critical path, top-N."""
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
    width = min(max((len(by_id[i].name) for i in shown if i >= 0), default=8), 60)
    for i in shown:
        if i < 0:
            lines.append(f"    ... {len(cp.nodes) - 11} more")
            continue
        g = by_id[i]
        lines.append(f"  #{g.id:<5d} {g.name:<{width}s}  {format_count(g.flops, 'FLOPs'):>13s}")
    lines.append("")
    ranked = s.top(top)
    lines.append(f"Top {len(ranked)} subgraphs by FLOPs:")
    width = min(max((len(g.name) for g in ranked), default=8), 60)
    pwidth = min(max((len(g.pattern) for g in ranked), default=7), 40)
    lines.append(f"  {'id':>5s}  {'subgraph':<{width}s}  {'pattern':<{pwidth}s}  {'FLOPs':>12s}  "
                 f"{'traffic':>10s}  {'intensity':>9s}  {'bound':<7s}  parallelism")
    for g in ranked:
        p = g.parallelism
        par = f"{format_count(p.output_elements)} el" + (" depthwise" if p.depthwise else "")
        lines.append(
            f"  {g.id:>5d}  {g.name[:width]:<{width}s}  {g.pattern[:pwidth]:<{pwidth}s}  "
            f"{format_count(g.flops, 'FLOPs'):>12s}  {format_bytes(g.memory):>10s}  "
            f"{g.arithmetic_intensity:9.3g}  {g.bottleneck.split('-')[0]:<7s}  {par}"
        )
    return "\n".join(lines) + "\n"
