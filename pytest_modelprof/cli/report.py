"""``modelprof report``: render a results file again."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from pytest_modelprof.errors import ModelprofError

if TYPE_CHECKING:
    pass

from pytest_modelprof.cli._common import (
    EXIT_FAILED,
    EXIT_OK,
    Command,
    add_option,
    show,
    write_reports,
)
from pytest_modelprof.textfit import terminal_width

__all__ = ["COMMAND"]


def _add_report_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("results", metavar="RESULTS.json", help="a results file (--modelprof-json)")
    add_option(p, "--html")
    add_option(p, "--markdown")
    add_option(p, "--top", default=10, metavar="N",
               help="layer changes printed per profile (default: 10)")



def _run_report(args: argparse.Namespace) -> int:
    from pytest_modelprof.report.text import render_diff
    from pytest_modelprof.report.view import build_view
    from pytest_modelprof.results.document import RunResults, load_document

    doc = load_document(args.results)
    if not isinstance(doc, RunResults):
        raise ModelprofError(f"{args.results}: not a results file (write one with "
                             f"--modelprof-json, or use 'modelprof compare' for two profiles)")
    args.output = None
    if not (args.html or args.markdown):
        width = terminal_width(60)
        show(render_diff(build_view(doc), top=args.top, width=width))
    write_reports(doc, args)
    return EXIT_FAILED if any(t.failed for t in doc.tests) else EXIT_OK



COMMAND = Command(
    name="report",
    summary="re-render a results file as HTML or Markdown (or print it)",
    description=(
        "Render a results file (--modelprof-json, modelprof merge) again, e.g. after\n"
        "downloading it from CI. Without --html or --markdown it prints the diff.\n"
        "Exit code 1 when a profile in it failed its gate."
    ),
    examples="""\
  modelprof report results.json --html report.html
  modelprof report results.json --markdown report.md
  modelprof report results.json --top 5""",
    add_arguments=_add_report_arguments,
    run=_run_report,
)
