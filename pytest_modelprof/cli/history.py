"""``modelprof history``: every committed version of the baselines, per test and metric."""

from __future__ import annotations

import argparse
from pathlib import Path

from pytest_modelprof._files import write_text_atomic
from pytest_modelprof.baseline.metrics import BUILTIN_METRICS
from pytest_modelprof.cli._common import EXIT_OK, Command, add_option, note, out, show
from pytest_modelprof.textfit import terminal_width

__all__ = ["COMMAND"]


def parse_metrics(text: str) -> list[str]:
    """``flops,traffic`` -> ``["flops", "traffic"]`` (checked against the table later, so a
    typo gets "did you mean")."""
    names = [n.strip() for n in text.split(",") if n.strip()]
    if not names:
        raise argparse.ArgumentTypeError(f"expected metric names such as flops,peak_activations; "
                                         f"got {text!r}")
    return names


def _add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("paths", nargs="*", metavar="PATH",
                   help="baseline folders or files of one git repository (default: baselines)")

    # history.build.DEFAULT_METRICS, without importing it (pydantic) for --help.
    default = [m.name for m in BUILTIN_METRICS if m.summary and not m.derived_from]
    p.add_argument("--metric", type=parse_metrics, metavar="NAMES",
                   help=f"comma-separated metrics of {', '.join(m.name for m in BUILTIN_METRICS)} "
                        f"(default: {', '.join(default)}, where recorded)")
    p.add_argument("--since", metavar="REF",
                   help="start at this commit (its versions are the first points)")
    p.add_argument("--test", action="append", default=[], metavar="ID",
                   help="only this test (a node id; repeatable)")
    add_option(p, "--top", default=20, metavar="N",
               help="rows of the largest-steps table (default: 20)")
    add_option(p, "--json", help="print the history document (schema_version 2) to stdout")
    add_option(p, "--output", metavar="FILE.json", help="write the history document to FILE")
    add_option(p, "--markdown", help="write the history as Markdown")
    add_option(p, "--html", help="write a self-contained page: a chart per test and metric")


def _run(args: argparse.Namespace) -> int:
    from pytest_modelprof.history import HistoryError, read_history

    paths = [Path(p) for p in args.paths]
    if not paths:
        if not Path("baselines").exists():
            raise HistoryError("no PATH given and no baselines/ folder here: give the folder "
                               "that holds the committed baselines (modelprof history PATH)")
        paths = [Path("baselines")]
    doc = read_history(paths, metrics=args.metric, since=args.since, tests=args.test,
                       top=args.top)
    if args.json:  # JSON alone on stdout, so it pipes into jq
        out(doc.to_json())
    if args.output:
        write_text_atomic(Path(args.output), doc.to_json())
        note(f"wrote {args.output}")
    if (args.json or args.output) and not (args.markdown or args.html):
        return EXIT_OK  # no view to build: the charts of every series are most of its time
    from pytest_modelprof.history.render import render_html, render_markdown, render_text
    from pytest_modelprof.history.view import build_history_view

    view = build_history_view(doc)
    for target, render in ((args.markdown, render_markdown), (args.html, render_html)):
        if target:
            write_text_atomic(Path(target), render(view))
            note(f"wrote {target}")
    if not (args.json or args.output or args.markdown or args.html):
        show(render_text(view, width=terminal_width()))
    return EXIT_OK


COMMAND = Command(
    name="history",
    summary="costs over commits: every committed version of the baselines, charted",
    description=(
        "Read every committed version of the baselines under PATH from git (one git log,\n"
        "one git cat-file --batch), follow renames, migrate old schema versions, and show\n"
        "each test's metrics over the commits that changed them: every step with its\n"
        "commit (short hash, date, subject), its delta and the environment change (torch\n"
        "version) since the previous version, and a table of the largest steps. Reads the\n"
        "commits on the first-parent line of HEAD. A shallow clone shows what it holds and\n"
        "says so. Without --json, --output, --markdown or --html it prints the largest steps."
    ),
    examples="""\
  modelprof history baselines --html history.html
  modelprof history baselines --metric flops,peak_activations --since v1.0 --markdown history.md
  modelprof history --json --test tests/test_zoo.py::test_resnet50
  modelprof history baselines --output history.json""",
    add_arguments=_add_arguments,
    run=_run,
)
