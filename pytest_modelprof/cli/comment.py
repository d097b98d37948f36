"""``modelprof comment``: the pull-request comment of a results file, safe to post as the bot."""

from __future__ import annotations

import argparse
from pathlib import Path

from pytest_modelprof.cli._common import EXIT_OK, Command, add_option, out

__all__ = ["COMMAND"]


def _add_comment_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("results", metavar="RESULTS.json",
                   help="a results file (--modelprof-json), e.g. from a pull request's gate")
    add_option(p, "--output", metavar="FILE.md", help="write the comment here (default: print it)")


def _run_comment(args: argparse.Namespace) -> int:
    from pytest_modelprof.report.comment import load_results, render_comment

    text = render_comment(load_results(args.results))
    if args.output:
        Path(args.output).write_text(text, encoding="utf-8")
    else:
        out(text)
    return EXIT_OK


COMMAND = Command(
    name="comment",
    summary="the pull-request comment of a results file: validated, capped, escaped",
    description=(
        "Render a results file (--modelprof-json) as the Markdown of a pull-request comment.\n"
        "The file may come from a fork's pull request, so it is treated as hostile: it must\n"
        "validate as a results file, every size is capped (the file, each text, the rows,\n"
        "the tests, the comment), every text is escaped (no HTML, image, link or @mention),\n"
        "and no link is taken from it. Exit code 0 whatever the verdicts; 2 on a bad file."
    ),
    examples="""\
  modelprof comment results.json --output comment.md
  modelprof comment modelprof-report/results.json""",
    add_arguments=_add_comment_arguments,
    run=_run_comment,
)
