"""Terminal renderers of the model list (``modelprof list``) and the fvcore table."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING

from pytest_modelprof.report.terminal import (
    DEFAULT_WIDTH,
    INDENT,
    format_shape,
    percent,
    render_table,
    section_title,
    wrap,
)
from pytest_modelprof.textfit import cut_middle, wrap_items
from pytest_modelprof.units import format_count

if TYPE_CHECKING:
    from pytest_modelprof.runtime.fvcore import FvcoreComparison

__all__ = ["render_model_list", "render_fvcore"]


def _columns(names: Sequence[str], width: int, indent: str) -> list[str]:
    """Names in column-major order (like ``ls``), as many columns as fit in ``width``."""
    if not names:
        return []
    col = min(max(len(n) for n in names), width - len(indent)) + 2
    ncols = max(1, (width - len(indent) + 2) // col)
    nrows = -(-len(names) // ncols)
    lines = []
    for r in range(nrows):
        cells = [cut_middle(names[c * nrows + r], col - 2).ljust(col)
                 for c in range(ncols) if c * nrows + r < len(names)]
        lines.append((indent + "".join(cells)).rstrip())
    return lines


def render_model_list(
    groups: Mapping[str, Sequence[str]],
    *,
    width: int = DEFAULT_WIDTH,
    filter: str | None = None,
    rows: int | None = None,
) -> str:
    """Model names grouped by source, each group in compact columns, with counts; ``rows``
    caps each group's lines (a screenful), naming how to see the rest."""
    lines: list[str] = []
    total = 0
    cut = False
    for source in sorted(groups):
        names = sorted(groups[source])
        if not names:
            continue
        total += len(names)
        lines += ["", f"{source} ({len(names)})"]
        shown = _columns(names, width, INDENT)
        if rows is not None and len(shown) > rows:
            count = rows  # as many names as fill ``rows`` lines of columns
            while count < len(names) and len(_columns(names[: count + 1], width, INDENT)) <= rows:
                count += 1
            shown = [
                *_columns(names[:count], width, INDENT),
                f"{INDENT}... and {len(names) - count} more: modelprof list --source {source}",
            ]
            cut = True
        lines += shown
    sources = sum(1 for names in groups.values() if names)
    matching = f" matching {filter!r}" if filter else ""
    if total == 0:
        return f"no models{matching}; run 'modelprof list' without --filter to see them all\n"
    head = f"{total} models{matching} from {sources} sources"
    hints = ["Profile one with: modelprof profile NAME [--input-shape 1,3,224,224]"]
    if cut:
        hints.append("Every name: modelprof list --all, or --filter TEXT")
    tail = [line for hint in hints for line in wrap(hint, width, "")]
    return "\n".join([head, *lines, "", *tail]) + "\n"


# -- the fvcore comparison ----------------------------------------------------------------------

def _giga(value: float) -> str:
    return f"{value / 1e9:.3f}"


def _op_lists(title: str, by_model: list[tuple[str, Mapping[str, int]]], width: int) -> list[str]:
    """A section of ``op xN`` lists, one per model that has any; none when no model has."""
    if not any(ops for _, ops in by_model):
        return []
    lines = section_title(title, width)
    for model, ops in by_model:
        if ops:
            items = [f"{op} x{n}" for op, n in sorted(ops.items())]
            lines += wrap_items(model, items, width, INDENT)
    return lines


def render_fvcore(
    comparisons: Iterable[FvcoreComparison],
    *,
    tolerance: float,
    failures: Mapping[str, str] | None = None,
    verbose: bool = False,
    width: int = DEFAULT_WIDTH,
) -> str:
    """The ours-vs-fvcore table (both in multiply-adds), what fvcore skipped, and any failures."""
    results = list(comparisons)
    failed = dict(failures or {})
    rows = []
    for c in results:
        rows.append([
            c.model,
            format_shape(c.input_shape) if c.input_shape else "-",
            _giga(c.ours_macs),
            _giga(c.fvcore_macs),
            ("+" if c.difference > 0 else "") + format_count(c.difference, "MACs"),
            f"{100 * c.agreement:.2f} %",
            "ok" if c.within(tolerance) else "OVER",
        ])
    for model, _ in failed.items():
        rows.append([model, "-", "-", "-", "-", "-", "ERROR"])
    lines = [
        "modelprof fvcore: our MACs beside fvcore's (fvcore counts one per multiply-add)",
        "=" * width,
        *render_table(
            ["Model", "Input", "Ours (GMACs)", "fvcore (GMACs)", "Difference", "Agreement",
             "Verdict"],
            rows, align=["<", "<", ">", ">", ">", ">", "<"], width=width,
        ),
        "",
        f"{INDENT}Agreement = 1 - |ours - fvcore| / fvcore; OVER when the difference exceeds "
        f"{percent(tolerance)}.",
    ]
    lines += _op_lists(
        "Ops fvcore skipped (its unsupported_ops(); counted as 0 by fvcore)",
        [(c.model, c.unsupported_ops) for c in results],
        width,
    )
    lines += _op_lists(
        "Ops we did not count (no cost formula)",
        [(c.model, c.ours_uncounted) for c in results],
        width,
    )
    if verbose:
        for c in results:
            lines += section_title(f"fvcore by operator: {c.model}", width)
            rows = [[op, format_count(n, "MACs")] for op, n in
                    sorted(c.fvcore_by_operator.items(), key=lambda kv: (-kv[1], kv[0]))]
            lines += render_table(["Operator", "MACs"], rows, width=width)
    if failed:
        lines += section_title("Failures", width)
        for model, message in failed.items():
            lines += wrap(f"{model}: {message}", width, INDENT)
    return "\n".join(lines) + "\n"
