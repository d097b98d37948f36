"""``modelprof list``: every model name the registry resolves, grouped by source."""

from __future__ import annotations

import argparse
import shutil
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    pass

from pytest_modelprof.cli._common import (
    EXIT_OK,
    Command,
    out,
)

__all__ = ["COMMAND"]


def _add_list_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--filter", "-f", metavar="TEXT",
                   help="only names containing TEXT (case-insensitive)")
    p.add_argument("--json", action="store_true",
                   help="print {source: [names]} as JSON instead of columns")



def _run_list(args: argparse.Namespace) -> int:
    from pytest_modelprof.models import list_models
    from pytest_modelprof.report.listings import render_model_list
    from pytest_modelprof.schema import dumps_deterministic

    groups = list_models(filter=args.filter)
    if args.json:
        out(dumps_deterministic({k: sorted(v) for k, v in groups.items()}))
        return EXIT_OK
    width = max(40, shutil.get_terminal_size((100, 24)).columns)
    out(render_model_list(groups, width=width, filter=args.filter))
    return EXIT_OK



COMMAND = Command(
    name="list",
    summary="list the model names 'profile' and 'fvcore' accept, grouped by source",
    description="List every known model name, grouped by where it comes from.",
    examples="""\
  modelprof list
  modelprof list --filter resnet
  modelprof list --json""",
    add_arguments=_add_list_arguments,
    run=_run_list,
)
