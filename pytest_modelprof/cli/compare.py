"""``modelprof compare``: judge one profile, baseline or results file against another."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from pytest_modelprof.errors import ModelprofError

if TYPE_CHECKING:
    pass

from pytest_modelprof.baseline.metrics import active_metrics
from pytest_modelprof.baseline.tolerance import Ignore, shown
from pytest_modelprof.baseline.tolerance import parse_tolerance as parse_limit_tolerance
from pytest_modelprof.cli._common import (
    EXIT_FAILED,
    EXIT_OK,
    Command,
    add_option,
    add_report_outputs,
    note,
    out,
    show,
    write_reports,
)
from pytest_modelprof.gate.judge import latency_tolerance
from pytest_modelprof.gate.limits import Limits, parse_limit_items
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
                        "max_flops_delta=10%%, max_params=30M, max_intensity_delta=5%%, "
                        "fail_on_uncounted=true; a latency limit (max_latency=5ms, "
                        "timing_verdicts=fail) is judged from "
                        "the timing rounds of two baseline or results files")
    add_option(p, "--top", default=10, metavar="N",
               help="layer changes shown per profile (default: 10)")
    p.add_argument("--model", metavar="NAME",
                   help="OLD and NEW are git refs (branch, tag, hash): build NAME at each in a "
                        "temporary worktree and time their forwards paired, in this session, "
                        "against --limit max_latency_delta (default 8 %%); exit 1 when NEW is "
                        "slower beyond it")
    add_option(p, "--input-shape",
               help="with --model: the input shape, e.g. 1,3,224,224 (default: the model's)")
    add_option(p, "--rounds", default=100,
               help="with --model: the gate's timing_rounds (default: 100): a first verdict "
                    "after min(10, N) paired rounds, more only while undecided, up to 8 x N "
                    "timed calls of the model")
    add_report_outputs(p)
    add_option(p, "--json", help="print the comparison as a results document to stdout instead "
               "of the text")



def _compare_limits(args: argparse.Namespace) -> Any:
    try:
        tolerance = parse_limit_tolerance(args.max_delta)
    except ValueError as exc:
        raise ModelprofError(f"--max-delta={shown(args.max_delta)}: {exc}") from None
    # Counted metrics only (latency is ignored by default: noise in a profile-to-profile diff),
    # and not marked explicit, so a metric neither side measures is left out, not "unmeasured".
    limits = Limits(tolerances={
        m.name: tolerance for m in active_metrics() if not isinstance(m.default_delta, Ignore)
    })
    extra = parse_limit_items(args.limit, "--limit", _limit_names())
    return limits.with_values(extra, "--limit")



def _limit_names() -> list[str]:
    # The switches the judge reads from two stored sides; growth and fvcore limits need a
    # sweep or a model run, which a stored file does not hold.
    return sorted([*active_metrics().limit_keys(), "timing_verdicts", "fail_on_uncounted"])



def _run_compare(args: argparse.Namespace) -> int:
    from pytest_modelprof.gate.documents import compare_documents
    from pytest_modelprof.report.text import render_diff
    from pytest_modelprof.report.view import build_view
    from pytest_modelprof.results.document import load_document

    limits = _compare_limits(args)
    if args.model:
        return _run_paired(args, limits)
    results = compare_documents(
        load_document(args.old), load_document(args.new), limits, new_source=args.new
    )
    width = terminal_width(60)
    if args.json:
        out(results.to_json())
    else:
        show(render_diff(build_view(results, title="modelprof compare"), top=args.top,
                         width=width))
    write_reports(results, args)
    # An error row (a test of the new run that failed before its gate judged it) is red too.
    red = any(t.failed or t.status in ("regressed", "error") for t in results.tests)
    return EXIT_FAILED if red else EXIT_OK



def _run_paired(args: argparse.Namespace, limits: Any) -> int:
    """``--model``: the model at OLD and at NEW, timed paired in two processes."""
    from pathlib import Path

    from pytest_modelprof.history.paired import time_against

    note(f"modelprof compare: timing {args.model} at {args.old} and {args.new}, paired "
         "(two temporary worktrees) ...")
    _, comparison = time_against(
        args.model, args.old, head_ref=args.new, root=Path.cwd(), input_shape=args.input_shape,
        rounds=args.rounds, tolerance=latency_tolerance(limits),
    )
    show(f"{args.model} at {args.new} against {args.old}: {comparison.describe()}\n")
    return EXIT_FAILED if comparison.verdict == "regressed" else EXIT_OK



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
        "there. Exit code 1 when anything regressed beyond its limit.\n"
        "With --model NAME, OLD and NEW are git refs instead: NAME is built at each in a\n"
        "temporary worktree (yours untouched) and the two forwards are timed in alternating\n"
        "rounds in one process, so a busy machine slows both (docs/timing-paired.md)."
    ),
    examples="""\
  modelprof compare old.json new.json
  modelprof compare old.json new.json --max-delta 5% --html diff.html --markdown diff.md
  modelprof compare main-results.json pr-results.json --limit max_params_delta=0
  modelprof compare old.json new.json --limit max_flops=5G --top 20
  modelprof compare v1.0 main --model my_pkg.nets:make_net --input-shape 1,3,32,32""",
    add_arguments=_add_compare_arguments,
    run=_run_compare,
)
