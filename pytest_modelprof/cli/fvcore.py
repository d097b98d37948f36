"""``modelprof fvcore``: our MAC counts beside fvcore's on the same models."""

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
    note,
    out,
    parse_names,
    parse_tolerance,
    resolve_names,
    show,
)

__all__ = ["COMMAND"]


def _add_fvcore_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("names", nargs="*", metavar="MODEL", help="model names (or use --models)")
    p.add_argument("--models", type=parse_names, action="append", default=[], metavar="A,B,...",
                   help="comma-separated model names")
    add_option(p, "--input-shape", metavar="SHAPE",
               help="input shape for every model (default: each model's own)")
    p.add_argument("--tolerance", type=parse_tolerance, default=0.05, metavar="REL",
                   help="largest accepted |ours - fvcore| / fvcore, e.g. 0.05 or 5%% "
                        "(default: 0.05); exit 1 above it")
    add_option(p, "--verbose",
               help="also list fvcore's count per operator for each model")
    add_option(p, "--json", help="print the comparisons as JSON")



def _run_fvcore(args: argparse.Namespace) -> int:
    from pytest_modelprof.report.listings import render_fvcore
    from pytest_modelprof.runtime.fvcore import (
        FvcoreComparison,
        compare_with_fvcore,
        load_fvcore,
    )
    from pytest_modelprof.schema import dumps_deterministic

    names = list(dict.fromkeys([*args.names, *(n for group in args.models for n in group)]))
    if not names:
        raise ModelprofError("name at least one model: modelprof fvcore --models resnet18,resnet50")
    load_fvcore()  # a missing extra fails once, before any model is built
    resolve_names(names)
    results: list[FvcoreComparison] = []
    failures: dict[str, str] = {}
    for i, name in enumerate(names, start=1):
        if len(names) > 1:
            note(f"[{i}/{len(names)}] {name} ...")
        try:
            results.append(compare_with_fvcore(name, args.input_shape))
        except ModelprofError as exc:
            failures[name] = str(exc)
    if args.json:
        doc = {
            "tolerance": args.tolerance,
            "models": [
                {
                    "model": c.model, "input_shape": list(c.input_shape or []),
                    "ours_macs": c.ours_macs, "fvcore_macs": c.fvcore_macs,
                    "difference": c.difference, "agreement": c.agreement,
                    "within_tolerance": c.within(args.tolerance),
                    "fvcore_unsupported_ops": c.unsupported_ops,
                    "ours_uncounted_ops": c.ours_uncounted,
                }
                for c in results
            ],
            "failures": failures,
        }
        out(dumps_deterministic(doc))
    else:
        show(render_fvcore(results, tolerance=args.tolerance, failures=failures,
                           verbose=args.verbose))
    over = [c.model for c in results if not c.within(args.tolerance)]
    return EXIT_FAILED if over or failures else EXIT_OK



COMMAND = Command(
    name="fvcore",
    summary="cross-check our MAC counts against fvcore's FlopCountAnalysis",
    description=(
        "Count each model with fvcore and with us, on the same CPU module and random input.\n"
        "fvcore counts one per multiply-add, so it is compared with our MACs. The ops\n"
        "fvcore skipped are listed. Exit code 1 when a difference exceeds --tolerance.\n"
        "Needs the fvcore extra: pip install 'pytest-modelprof[fvcore]'."
    ),
    examples="""\
  modelprof fvcore --models resnet18,resnet50,mobilenet_v2,vit_b_16
  modelprof fvcore resnet18 --input-shape 1,3,64,64 --tolerance 2%
  modelprof fvcore --models resnet50 --verbose        # fvcore's count per operator""",
    add_arguments=_add_fvcore_arguments,
    run=_run_fvcore,
)
