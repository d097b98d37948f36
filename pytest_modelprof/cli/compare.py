"""``modelprof compare``: judge one profile, baseline or results file against another."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from pytest_modelprof.errors import ModelprofError

if TYPE_CHECKING:
    pass

from pytest_modelprof.cli._common import (
    EXIT_FAILED,
    EXIT_OK,
    Command,
    add_report_outputs,
    parse_top,
    show,
    write_reports,
)
from pytest_modelprof.textfit import terminal_width

__all__ = ["COMMAND"]


def _add_compare_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("old", metavar="OLD.json", help="the baseline side: a profile, a baseline "
                   "file or a results file")
    p.add_argument("new", metavar="NEW.json", help="the current side, of the same kind as OLD")
    p.add_argument("--max-delta", metavar="TOL", default="exact",
                   help="tolerance of every counted metric, as in the marker: exact (default, "
                        "the gate's own default), 5%%, 0.05 or ignore")
    p.add_argument("--limit", action="append", default=[], metavar="KEY=VALUE",
                   help="one limit in the marker's grammar, repeatable, over --max-delta: "
                        "max_flops_delta=10%%, max_params=30M, max_ai_drop=5%%, strict_ops=true; "
                        "a latency limit (max_latency_ms=5, timing_strict=true) is judged from "
                        "the timing rounds of two baseline or results files")
    p.add_argument("--top", type=parse_top, default=10, metavar="N",
                   help="layer changes shown per profile (default: 10)")
    add_report_outputs(p)



def _compare_limits(args: argparse.Namespace) -> Any:
    from pytest_modelprof.baseline.metrics import METRICS
    from pytest_modelprof.baseline.tolerance import Ignore, shown
    from pytest_modelprof.baseline.tolerance import parse_tolerance as parse_limit_tolerance
    from pytest_modelprof.gate.settings import Limits

    try:
        tolerance = parse_limit_tolerance(args.max_delta)
    except ValueError as exc:
        raise ModelprofError(f"--max-delta={shown(args.max_delta)}: {exc}") from None
    # Counted metrics only (latency is ignored by default: noise in a profile-to-profile diff),
    # and not marked explicit, so a metric neither side measures is left out, not "unmeasured".
    limits = Limits(tolerances={
        m.name: tolerance for m in METRICS if not isinstance(m.default_delta, Ignore)
    })
    extra: dict[str, object] = {}
    for item in args.limit:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ModelprofError(f"--limit: expected KEY=VALUE such as max_flops_delta=10%, "
                                 f"got {item!r}")
        extra[key.strip()] = value.strip()
    unknown = sorted(k for k in extra if k not in _limit_names())
    if unknown:
        raise ModelprofError(f"--limit: unknown limit {', '.join(unknown)}; use one of "
                             f"{', '.join(_limit_names())}")
    return limits.with_values(extra, "--limit")



def _limit_names() -> list[str]:
    from pytest_modelprof.baseline.metrics import LIMIT_KEYS

    # The switches the judge reads from two stored sides; growth and fvcore limits need a
    # sweep or a model run, which a stored file does not hold.
    return sorted([*LIMIT_KEYS, "timing_strict", "strict_ops"])



def _run_compare(args: argparse.Namespace) -> int:
    from pytest_modelprof.gate.documents import compare_documents
    from pytest_modelprof.gate.results import load_document
    from pytest_modelprof.report.text import render_diff
    from pytest_modelprof.report.view import build_view

    limits = _compare_limits(args)
    results = compare_documents(
        load_document(args.old), load_document(args.new), limits, new_source=args.new
    )
    width = terminal_width(60)
    show(render_diff(build_view(results, title="modelprof compare"), top=args.top, width=width))
    write_reports(results, args)
    # An error row (a test of the new run that failed before its gate judged it) is red too.
    red = any(t.failed or t.status in ("regressed", "error") for t in results.tests)
    return EXIT_FAILED if red else EXIT_OK



COMMAND = Command(
    name="compare",
    summary="diff two profiles (or two results files): metrics, layer changes; exit 1 if worse",
    description=(
        "Judge NEW against OLD with the pytest gate's own judge, OLD as the baseline: the\n"
        "same rows (newly uncounted ops, a capture that falls back from meta to real, ...)\n"
        "and the same verdicts. OLD and NEW are two profiles (modelprof profile -o x.json),\n"
        "two baseline files or two results files (--modelprof-json; tests are matched by\n"
        "id). Prints the metrics and the layers that changed most. Counted metrics are exact\n"
        "by default, like the gate: any growth is a regression. A latency limit is judged\n"
        "from the timing rounds the files stored; profiles store none, so it is refused\n"
        "there. Exit code 1 when anything regressed beyond its limit."
    ),
    examples="""\
  modelprof compare old.json new.json
  modelprof compare old.json new.json --max-delta 5% --html diff.html --markdown diff.md
  modelprof compare main-results.json pr-results.json --limit max_params_delta=0
  modelprof compare old.json new.json --limit max_flops=5G --top 20""",
    add_arguments=_add_compare_arguments,
    run=_run_compare,
)
