"""``modelprof list``: every model name the registry resolves, grouped by source."""

from __future__ import annotations

import argparse

from pytest_modelprof.cli._common import (
    EXIT_OK,
    Command,
    add_option,
    note,
    out,
    show,
)
from pytest_modelprof.errors import ModelprofError, did_you_mean
from pytest_modelprof.models import list_models
from pytest_modelprof.textfit import terminal_width

__all__ = ["COMMAND"]


def _add_list_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--filter", "-f", metavar="TEXT",
                   help="only names containing TEXT (case-insensitive; when none does, the "
                        "names that contain it but for a typo)")
    p.add_argument("--source", metavar="NAME",
                   help="only the names of one source (every one of them), e.g. hf or timm")
    p.add_argument("--all", action="store_true",
                   help="every name of every source (the default shows a screenful per source)")
    add_option(p, "--json",
               help="print {source: [names]} as JSON instead of columns")



def _run_list(args: argparse.Namespace) -> int:
    from pytest_modelprof.report.listings import render_model_list
    from pytest_modelprof.schema import dumps_deterministic

    groups = list_models(filter=args.filter)
    if args.filter and not any(
        args.filter.lower() in n.lower() for v in groups.values() for n in v
    ):
        note(f"no model name contains {args.filter!r}; listing the names that nearly do")
    if args.source is not None:
        if args.source not in groups:
            hint = did_you_mean(args.source, groups, n=1, cutoff=0.5)
            raise ModelprofError(
                f"--source {args.source!r} is no model source{hint or '.'} "
                f"The sources are: {', '.join(sorted(groups))}"
            )
        groups = {args.source: groups[args.source]}
    if args.json:
        out(dumps_deterministic({k: sorted(v) for k, v in groups.items()}))
        return EXIT_OK
    width = terminal_width()
    # A screenful per source unless the user narrowed the list or asked for all of it.
    whole = args.all or args.filter or args.source is not None
    show(render_model_list(groups, width=width, filter=args.filter, rows=None if whole else 4))
    return EXIT_OK



COMMAND = Command(
    name="list",
    summary="list the model names 'profile' and 'fvcore' accept, grouped by source",
    description="List every known model name, grouped by where it comes from.",
    examples="""\
  modelprof list
  modelprof list --filter resnet
  modelprof list --source timm
  modelprof list --all --json""",
    add_arguments=_add_list_arguments,
    run=_run_list,
)
