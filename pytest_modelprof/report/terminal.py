"""Plain-text renderers for the terminal: a profile, the model list and the fvcore comparison.

Everything here is a pure function from data to a string. Lines never exceed ``width`` columns
(100 by default): tables shrink their name column and abbreviate names in the middle
(``model.22.cv3.0…conv``); full names stay in the JSON and CSV exports. Numbers always carry
their unit, and nothing depends on time or on the machine running the report.
"""

from __future__ import annotations

import textwrap
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from pytest_modelprof.analysis.rollup import Totals, classify, module_tree_totals
from pytest_modelprof.schema import LayerStats, ModelProfile
from pytest_modelprof.textfit import Align, Column, fit_line, layout_table, plain, wrap_under
from pytest_modelprof.units import format_bytes, format_count

if TYPE_CHECKING:
    from pytest_modelprof.capture.record import Capture

__all__ = [
    "DEFAULT_WIDTH",
    "format_shape",
    "render_table",
    "render_profile",
]

DEFAULT_WIDTH = 100
INDENT = "  "
AI_HEADER = "Intensity"  # FLOP/B, as the summary line above the table says
# Layer tables shrink the name column to 24, then the type column to 10, then the name to 8.
LAYER_FLEX = ((0, 24), (1, 10), (0, 8))


# -- small formatting helpers -------------------------------------------------------------------

def format_ai(value: float, unit: bool = True) -> str:
    """Arithmetic intensity: ``55.2 FLOPs/B`` (the bare number for a column headed by its unit)."""
    # No SI prefix: "1 KFLOPs/B" would read as a thousand FLOPs per byte only to the careful.
    number = f"{value:.0f}" if value >= 999.5 else format_count(value)
    return f"{number} FLOPs/B" if unit else number


def format_shape(shape: Sequence[int] | None) -> str:
    """``[1, 64, 32, 32]`` -> ``1x64x32x32``; an empty shape is a scalar."""
    if shape is None:
        return "-"
    return "x".join(str(s) for s in shape) if shape else "scalar"


def percent(share: float) -> str:
    return f"{100 * share:.1f} %"


def _bound(bottleneck: str) -> str:
    return {"compute-bound": "compute", "memory-bound": "memory"}.get(bottleneck, "-")


def wrap(text: str, width: int, indent: str) -> list[str]:
    return wrap_under(text, width, indent) or [indent]


# -- tables -------------------------------------------------------------------------------------

def render_table(
    headers: Sequence[str],
    rows: Sequence[Sequence[str]],
    *,
    align: Sequence[Align] | None = None,
    flex: Sequence[tuple[int, int]] = ((0, 8),),
    width: int = DEFAULT_WIDTH,
    indent: str = INDENT,
    drop: Mapping[str, int] | None = None,
) -> list[str]:
    """A report table laid out by :func:`~pytest_modelprof.textfit.layout_table`: the first
    column left-aligned, the figures right-aligned, the ``flex`` columns shrinking in order
    (:data:`LAYER_FLEX` for a layer table), their cells cut in the middle; then the ``drop``
    columns (header -> rank, the lowest first) are left out, and a last line says which."""
    right: list[Align] = [">"] * (len(headers) - 1)
    aligns: Sequence[Align] = align or ["<", *right]
    ranks = drop or {}
    columns = [Column(h, a, drop=ranks.get(h)) for h, a in zip(headers, aligns, strict=True)]
    table = layout_table(columns, rows, width, shrink=flex, indent=indent)
    if not table.left_out:
        return table.lines
    note = f"{indent}({', '.join(table.left_out)} left out to fit {width} columns; --json has all)"
    return [*table.lines, *fit_line(note, width)]


def section_title(title: str, width: int) -> list[str]:
    return ["", title, "-" * min(width, max(len(title), 40))]


# -- the profile --------------------------------------------------------------------------------

@dataclass(frozen=True)
class _TreeRow:
    path: str
    depth: int
    totals: Totals


def _tree_rows(capture: Capture) -> list[_TreeRow]:
    """Every module that ran ops (and its ancestors), parents first, in first-execution order."""
    totals = module_tree_totals(capture)
    children: dict[str, list[str]] = {}
    seen: set[str] = {""}
    for op in capture.ops:
        path = op.module
        chain: list[str] = []
        while path not in seen:
            chain.append(path)
            path = path.rpartition(".")[0]
        for node in reversed(chain):
            seen.add(node)
            children.setdefault(node.rpartition(".")[0], []).append(node)
    rows: list[_TreeRow] = []

    def walk(path: str, depth: int) -> None:
        rows.append(_TreeRow(path, depth, totals[path]))
        for child in children.get(path, []):
            walk(child, depth + 1)

    if "" in totals:
        walk("", 0)
    return rows


def _subtree_params(capture: Capture) -> dict[str, int]:
    out: dict[str, int] = {}
    for path, own in capture.module_params.items():
        node = path
        while True:
            out[node] = out.get(node, 0) + own
            if not node:
                break
            node = node.rpartition(".")[0]
    return out


def _capture_text(profile: ModelProfile) -> str:
    info = profile.capture
    reason = info.reason if info.mode in info.reason else f"{info.mode} tensors: {info.reason}"
    return reason if info.warmup else f"{reason}; no warm-up pass"


def _summary(profile: ModelProfile, width: int) -> list[str]:
    machine = profile.machine
    inputs = ", ".join(
        (f"{s.name}=" if s.name else "") + f"{format_shape(s.shape)} {s.dtype}"
        for s in profile.inputs
    ) or "none"
    flops = format_count(profile.total_flops, "FLOPs")
    macs = format_count(profile.total_macs, "MACs")
    if profile.include_backward:
        flops += (
            f" (forward {format_count(profile.forward_flops, 'FLOPs')}, "
            f"backward {format_count(profile.backward_flops, 'FLOPs')})"
        )
        macs += (
            f" (forward {format_count(profile.forward_macs, 'MACs')}, "
            f"backward {format_count(profile.backward_macs, 'MACs')})"
        )
    params = (
        f"{format_count(profile.total_params)} params "
        f"({format_bytes(profile.param_bytes)}; buffers {format_bytes(profile.buffer_bytes)})"
    )
    env = profile.environment
    items = [
        ("Model", profile.model),
        ("Capture", _capture_text(profile)),
        ("Inputs", inputs),
        ("Device, dtype", f"{env.device}, {env.dtype}"),
        ("Parameters", params),
        ("MACs", macs),
        ("FLOPs", flops),
        ("Traffic", f"{format_bytes(profile.total_traffic)} (read + written by every op)"),
        ("Peak activations", format_bytes(profile.peak_activation_bytes)),
        ("Intensity", format_ai(profile.arithmetic_intensity)),
        (
            "Machine balance",
            f"{format_ai(machine.balance)} ({machine.name}: "
            f"{format_count(machine.peak_flops, 'FLOP/s')}, "
            f"{format_bytes(machine.bandwidth)}/s)",
        ),
        ("ATen ops", f"{profile.num_ops} (views excluded), {len(profile.layers)} layers"),
    ]
    label_width = max(len(k) for k, _ in items) + 2
    lines = [f"modelprof profile: {profile.model}", "=" * width, "Summary"]
    for key, value in items:
        wrapped = textwrap.wrap(
            value, width=width - len(INDENT) - label_width, break_on_hyphens=False
        ) or [""]
        lines.append(f"{INDENT}{key.ljust(label_width)}{wrapped[0]}")
        lines.extend(f"{INDENT}{'':{label_width}}{INDENT}{more}" for more in wrapped[1:])
    return lines


def _op_breakdown(profile: ModelProfile, width: int) -> list[str]:
    bar_width = 20
    rows = [
        [
            f.family,
            str(f.count),
            format_count(f.flops, "FLOPs"),
            format_count(f.macs, "MACs"),
            format_bytes(f.traffic),
            percent(f.share),
            "#" * round(bar_width * f.share),
        ]
        for f in profile.op_breakdown
    ]
    return [
        *section_title("Operation breakdown (by op family; share of FLOPs)", width),
        *render_table(
            ["Family", "Ops", "FLOPs", "MACs", "Traffic", "Share", ""],
            rows, align=["<", ">", ">", ">", ">", ">", "<"], width=width,
        ),
    ]


def _bottlenecks(profile: ModelProfile, width: int) -> list[str]:
    total_flops = sum(layer.flops for layer in profile.layers) or 1
    total_traffic = sum(layer.traffic for layer in profile.layers) or 1
    groups: dict[str, list[LayerStats]] = {"compute-bound": [], "memory-bound": [], "none": []}
    for layer in profile.layers:
        groups.setdefault(layer.bottleneck, []).append(layer)
    rows = []
    for kind, label in (
        ("compute-bound", "compute-bound"), ("memory-bound", "memory-bound"), ("none", "no cost"),
    ):
        layers = groups[kind]
        if kind == "none" and not layers:
            continue
        flops = sum(layer.flops for layer in layers)
        memory = sum(layer.traffic for layer in layers)
        rows.append([
            label, str(len(layers)), format_count(flops, "FLOPs"), percent(flops / total_flops),
            format_bytes(memory), percent(memory / total_traffic),
        ])
    balance = format_ai(profile.machine.balance)
    return [
        *section_title(
            f"Bottleneck analysis (per layer, against {profile.machine.name}: "
            f"compute-bound when intensity >= {balance})",
            width,
        ),
        *render_table(
            ["Class", "Layers", "FLOPs", "FLOPs share", "Traffic", "Traffic share"], rows,
            width=width,
        ),
    ]


def _layer_row(layer: LayerStats, show_shape: bool) -> list[str]:
    row = [
        layer.name,
        layer.type,
        format_count(layer.flops, "FLOPs"),
        format_bytes(layer.traffic),
        format_ai(layer.arithmetic_intensity, unit=False),
        _bound(layer.bottleneck),
    ]
    if show_shape:
        row.append(format_shape(layer.output_shape))
    return row


def _layer_headers(show_shape: bool) -> list[str]:
    headers = ["Layer", "Type", "FLOPs", "Traffic", AI_HEADER, "Bound"]
    return [*headers, "Output shape"] if show_shape else headers


#: What a narrow terminal leaves out of a layer table first: the bound (the intensity against the
#: machine balance says it), then the intensity itself.
LAYER_DROP: Mapping[str, int] = {"Bound": 0, AI_HEADER: 1}


def _layer_aligns(show_shape: bool) -> list[Align]:
    aligns: list[Align] = ["<", "<", ">", ">", ">", "<"]
    return [*aligns, "<"] if show_shape else aligns


def _top_layers(profile: ModelProfile, top: int, show_shape: bool, width: int) -> list[str]:
    ranked = sorted(
        enumerate(profile.layers), key=lambda item: (-item[1].flops, -item[1].traffic, item[0])
    )[:top]
    rows = [[str(rank), *_layer_row(layer, show_shape)] for rank, (_, layer) in
            enumerate(ranked, start=1)]
    share = sum(layer.flops for _, layer in ranked) / (profile.total_flops or 1)
    return [
        *section_title(
            f"Top {len(rows)} of {len(profile.layers)} layers by FLOPs "
            f"({percent(share)} of all FLOPs)",
            width,
        ),
        *render_table(
            ["#", *_layer_headers(show_shape)], rows,
            align=[">", *_layer_aligns(show_shape)], flex=((1, 24), (2, 10), (1, 8)),
            width=width, drop=LAYER_DROP,
        ),
    ]


def _all_layers_flat(profile: ModelProfile, show_shape: bool, width: int) -> list[str]:
    rows = [_layer_row(layer, show_shape) for layer in profile.layers]
    return [
        *section_title(f"All {len(rows)} layers (ops run directly in each module)", width),
        *render_table(
            _layer_headers(show_shape), rows, align=_layer_aligns(show_shape), flex=LAYER_FLEX,
            width=width, drop=LAYER_DROP,
        ),
    ]


def _module_tree(profile: ModelProfile, capture: Capture, show_shape: bool,
                 width: int) -> list[str]:
    params = _subtree_params(capture)
    nodes = _tree_rows(capture)
    labels = [profile.model if n.path == "" else n.path.rpartition(".")[2] for n in nodes]
    rows = []
    for node, label in zip(nodes, labels, strict=True):
        t = node.totals
        call = capture.modules.get(node.path)
        row = [
            label,
            capture.module_types.get(node.path, "?"),
            format_count(params.get(node.path, 0)),
            format_count(t.flops, "FLOPs"),
            format_bytes(t.memory),
            format_ai(t.flops / t.memory if t.memory else 0.0, unit=False),
            _bound(classify(t.flops, t.memory, profile.machine)),
        ]
        if show_shape:
            row.append(format_shape(call.output_shape if call else None))
        rows.append(row)
    headers = ["Module", "Type", "Params", "FLOPs", "Traffic", AI_HEADER, "Bound"]
    aligns: list[Align] = ["<", "<", ">", ">", ">", ">", "<"]
    if show_shape:
        headers.append("Output shape")
        aligns.append("<")
    # Two blanks per level reads best; deep trees (YOLO heads) fall back to one blank per level
    # rather than abbreviating the names, and to abbreviation only when even that is too wide.
    for step in (2, 1):
        for row, node, label in zip(rows, nodes, labels, strict=True):
            row[0] = " " * (step * node.depth) + label
        table = render_table(headers, rows, align=aligns, flex=LAYER_FLEX, width=width,
                             drop=LAYER_DROP)
        body = zip(table[1 : 1 + len(rows)], rows, strict=True)
        if all(line[len(INDENT):].startswith(row[0]) for line, row in body):
            break
    return [
        *section_title("Module tree (every module with the totals of its subtree)", width),
        *table,
    ]


def _not_counted(profile: ModelProfile, width: int) -> list[str]:
    lines: list[str] = []
    if profile.uncounted_ops:
        rows = []
        for u in profile.uncounted_ops:
            where = ", ".join(u.modules[:3]) + (f" (+{len(u.modules) - 3})"
                                                if len(u.modules) > 3 else "")
            rows.append([u.op, f"{u.count}x", where])
        lines += section_title(
            f"Uncounted ops: {len(rows)} ATen ops ran without a cost formula (counted as 0)",
            width,
        )
        lines += render_table(["Op", "Calls", "Where"], rows, align=["<", ">", "<"],
                              flex=((2, 24), (0, 24), (2, 8)), width=width)
    if profile.uncalled_modules:
        names = ", ".join(profile.uncalled_modules)
        lines += section_title(
            f"Uncalled modules: {len(profile.uncalled_modules)} defined but never run", width
        )
        lines += wrap(names, width, INDENT)
    return lines


def render_profile(
    profile: ModelProfile,
    *,
    top: int = 10,
    verbose: bool = False,
    show_shape: bool = False,
    width: int = DEFAULT_WIDTH,
    capture: Capture | None = None,
) -> str:
    """The full terminal report of one profile; ``verbose`` adds every layer (as a module tree
    when the op capture the profile was made from is given, else as a flat list)."""
    lines = _summary(profile, width)
    lines += _op_breakdown(profile, width)
    lines += _bottlenecks(profile, width)
    if top > 0 and profile.layers:
        lines += _top_layers(profile, top, show_shape, width)
    if verbose:
        if capture is not None and capture.ops:
            lines += _module_tree(profile, capture, show_shape, width)
        else:
            lines += _all_layers_flat(profile, show_shape, width)
    lines += _not_counted(profile, width)
    # Layer and module names are the model's own text: no terminal escape reaches the screen.
    return plain("\n".join(lines) + "\n")


# -- the model list -----------------------------------------------------------------------------
