"""``modelprof merge``: join the results files of CI shards."""

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
    write_reports,
)

__all__ = ["COMMAND"]


def _add_merge_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("files", nargs="+", metavar="SHARD.json", help="results files to join")
    add_option(p, "--output", required=True, metavar="ALL.json",
               help="where to write the merged results")
    add_option(p, "--html", help="also render the merged HTML report")
    add_option(p, "--markdown", help="also render the merged Markdown")



def _run_merge(args: argparse.Namespace) -> int:
    from pytest_modelprof.results.document import RunResults, load_document
    from pytest_modelprof.results.merge import merge_results

    parts = []
    for name in args.files:
        doc = load_document(name)
        if not isinstance(doc, RunResults):
            raise ModelprofError(f"{name}: not a results file (write one with --modelprof-json)")
        parts.append((name, doc))
    merged = merge_results(parts)
    write_reports(merged, args)
    return EXIT_FAILED if any(t.failed for t in merged.tests) else EXIT_OK



COMMAND = Command(
    name="merge",
    summary="join the results files of CI shards into one (and render it)",
    description=(
        "Join results files written by --modelprof-json in a sharded CI matrix. A test in\n"
        "two shards, or shards from two commits, is an error. Exit code 1 when a merged\n"
        "profile failed its gate."
    ),
    examples="""\
  modelprof merge shard-*.json -o all.json
  modelprof merge shard-*.json -o all.json --html report.html --markdown report.md""",
    add_arguments=_add_merge_arguments,
    run=_run_merge,
)
