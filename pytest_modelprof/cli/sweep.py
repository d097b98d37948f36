"""``modelprof sweep``: metrics over batch, sequence length or input size, with growth exponents."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    pass

from pytest_modelprof.cli._common import (
    EXIT_FAILED,
    EXIT_OK,
    EXIT_USAGE,
    PROG,
    Command,
    out,
    parse_shape,
    parse_top,
    resolve_names,
)

__all__ = ["COMMAND"]


def parse_axis_sizes(text: str) -> list[int]:
    """``"1,8,32"`` -> ``[1, 8, 32]`` (imported on use: sweep.py imports torch)."""
    from pytest_modelprof.runtime.sweep import axis_values_arg

    return axis_values_arg(text)



def _add_sweep_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("model", help="a model name (see 'modelprof list')")
    p.add_argument("--batch", type=parse_axis_sizes, metavar="N,N,...", help="batch sizes")
    p.add_argument("--seq-len", type=parse_axis_sizes, metavar="N,N,...",
                   help="sequence lengths (dimension 1 of the input)")
    p.add_argument("--input-size", type=parse_axis_sizes, metavar="N,N,...",
                   help="spatial sizes (H = W)")
    p.add_argument("--input-shape", type=parse_shape, metavar="SHAPE",
                   help="template input shape; the swept dimensions are replaced")
    p.add_argument("--no-latency", action="store_true", help="skip timing (FLOPs and memory only)")
    p.add_argument("--rounds", type=parse_top, default=10, metavar="N",
                   help="timed rounds per point (default 10)")
    p.add_argument("--max-flops-growth-exponent", type=float, metavar="K",
                   help="exit 1 when FLOPs grow faster than value**K along any axis")
    p.add_argument("--json", action="store_true", help="print the sweep as JSON")



def _run_sweep(args: argparse.Namespace) -> int:
    from pytest_modelprof.runtime.sweep import check_growth, format_sweep, sweep

    over = {k: v for k, v in (("batch", args.batch), ("seq_len", args.seq_len),
                              ("input_size", args.input_size)) if v}
    if not over:
        print(f"{PROG} sweep: error: give --batch, --seq-len or --input-size", file=sys.stderr)
        return EXIT_USAGE
    resolve_names([args.model])
    result = sweep(args.model, over=over, input_shape=args.input_shape,
                   latency=not args.no_latency, rounds=args.rounds)
    out(result.model_dump_json(indent=2) if args.json else format_sweep(result))
    violations = check_growth(result, {"max_flops_growth_exponent": args.max_flops_growth_exponent})
    for violation in violations:
        print(f"{PROG} sweep: FAIL {violation.message}", file=sys.stderr)
    return EXIT_FAILED if violations else EXIT_OK



COMMAND = Command(
    name="sweep",
    summary="FLOPs, memory and latency over batch / seq-len / input size, growth exponents",
    description=(
        "Profile MODEL at each point of one or more axes (each swept alone, the others at\n"
        "their first value) and fit metric ~ value**k per metric by least squares in\n"
        "log-log space. Attention grows about quadratically in sequence length; a change\n"
        "that turns linear growth into quadratic growth shows up as a larger exponent."
    ),
    examples="""\
  modelprof sweep resnet18 --batch 1,8,32
  modelprof sweep vit_b_16 --batch 1,2,4 --no-latency
  modelprof sweep resnet50 --input-size 112,224,448 --no-latency --json > sweep.json
  modelprof sweep resnet18 --batch 1,2,4 --max-flops-growth-exponent 1.05""",
    add_arguments=_add_sweep_arguments,
    run=_run_sweep,
)
