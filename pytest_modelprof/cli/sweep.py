"""``modelprof sweep``: metrics over batch, sequence length or input size, with growth exponents."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable

from pytest_modelprof.cli._common import (
    EXIT_FAILED,
    EXIT_OK,
    EXIT_USAGE,
    PROG,
    Command,
    add_option,
    out,
    resolve_names,
    show,
)
from pytest_modelprof.errors import ModelprofError
from pytest_modelprof.report.sweep_text import format_sweep
from pytest_modelprof.textfit import terminal_width

__all__ = ["COMMAND"]


def parse_axis_sizes(text: str) -> list[int]:
    """``"1,8,32"`` -> ``[1, 8, 32]``; one value (``"32"``) holds the axis there, unswept.
    Two or more values must increase (``argparse`` ``type=``: errors are usage errors)."""
    values = _ints(text)
    if values != sorted(set(values)):
        raise argparse.ArgumentTypeError(
            f"sweep values must be positive and increasing, got {text!r}"
        )
    return values


def _ints(text: str) -> list[int]:
    try:
        values = [int(v) for v in text.replace(" ", "").split(",") if v]
    except ValueError:
        values = []
    if not values or any(v <= 0 for v in values):
        raise argparse.ArgumentTypeError(
            f"expected positive integers separated by commas, such as 1,8,32; got {text!r}"
        )
    return values


def parse_sweep_arch(text: str) -> tuple[str, list[int]]:
    """``num_hidden_layers=2,4,8`` -> ``("num_hidden_layers", [2, 4, 8])``."""
    key, sep, raw = text.partition("=")
    key = key.strip()
    if not sep or not key.isidentifier():
        raise argparse.ArgumentTypeError(
            f"expected KEY=V1,V2,... such as num_hidden_layers=2,4,8; got {text!r}"
        )
    values = _ints(raw)
    if len(values) < 2 or values != sorted(set(values)):
        raise argparse.ArgumentTypeError(
            f"{key}: a sweep needs two or more increasing values, such as {key}=2,4,8; "
            f"got {raw.strip()!r}"
        )
    return key, values


def _add_sweep_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("model", help="a model name (see 'modelprof list')")
    p.add_argument("--batch", type=parse_axis_sizes, metavar="N,N,...",
                   help="batch sizes (one value holds the batch there)")
    p.add_argument("--seq-len", type=parse_axis_sizes, metavar="N,N,...",
                   help="sequence lengths (dimension 1 of the input; one value holds it)")
    p.add_argument("--input-size", type=parse_axis_sizes, metavar="N,N,...",
                   help="spatial sizes (H = W; one value holds it)")
    p.add_argument("--sweep-arch", type=parse_sweep_arch, action="append", default=[],
                   metavar="KEY=V1,V2,...",
                   help="a builder keyword to sweep, repeatable: the model is rebuilt with each "
                        "value (e.g. num_hidden_layers=2,4,8; num_classes=10,100,1000)")
    add_option(p, "--arch",
               help="builder keyword held fixed at every point, repeatable "
                    "(e.g. --arch hidden_size=64)")
    add_option(p, "--input-shape", metavar="SHAPE",
               help="template input shape; the swept dimensions are replaced")
    p.add_argument("--no-latency", action="store_true", help="skip timing (FLOPs and traffic only)")
    add_option(p, "--rounds", default=10,
               help="timed rounds per point (default 10)")
    p.add_argument("--max-flops-growth", type=float, metavar="K",
                   help="exit 1 when FLOPs grow faster than value**K along any axis")
    add_option(p, "--json", help="print the sweep as JSON")


def _progress(timed: bool, rounds: int) -> Callable[[str], None]:
    """Each point on stderr as it starts: timing takes seconds a point, and stdout stays data."""

    def tell(point: str) -> None:
        what = f"profiling and timing ({rounds} rounds)" if timed else "profiling"
        print(f"{PROG} sweep: {what} {point}", file=sys.stderr, flush=True)

    return tell


def _run_sweep(args: argparse.Namespace) -> int:
    from pytest_modelprof.runtime.sweep import sweep  # imports torch
    from pytest_modelprof.runtime.sweep_result import check_growth

    over: dict[str, list[int]] = {
        k: v for k, v in (("batch", args.batch), ("seq_len", args.seq_len),
                          ("input_size", args.input_size)) if v
    }
    for key, values in args.sweep_arch:
        if key in over:
            print(f"{PROG} sweep: error: {key} is given twice", file=sys.stderr)
            return EXIT_USAGE
        over[key] = values
    if not any(len(v) > 1 for v in over.values()):
        print(f"{PROG} sweep: error: give --batch, --seq-len or --input-size with two or more "
              "values, or --sweep-arch KEY=V1,V2,...", file=sys.stderr)
        return EXIT_USAGE
    fixed = dict(args.arch)
    both = sorted(set(fixed) & set(over))
    if both:
        print(f"{PROG} sweep: error: {both[0]} is both swept and fixed (--arch); give it once",
              file=sys.stderr)
        return EXIT_USAGE
    resolve_names([args.model])
    try:
        result = sweep(args.model, over=over, input_shape=args.input_shape,
                       latency=not args.no_latency, rounds=args.rounds, arch_kwargs=fixed,
                       progress=_progress(not args.no_latency, args.rounds))
    except (TypeError, ValueError) as exc:  # a keyword the builder does not take, a bad value
        raise ModelprofError(f"{args.model}: {' '.join(str(exc).split())}") from exc
    if args.json:
        out(result.model_dump_json(indent=2))
    else:
        show(format_sweep(result, width=terminal_width()))
    violations = check_growth(result, {"max_flops_growth": args.max_flops_growth})
    for violation in violations:
        print(f"{PROG} sweep: FAIL {violation.message}", file=sys.stderr)
    return EXIT_FAILED if violations else EXIT_OK


COMMAND = Command(
    name="sweep",
    summary="FLOPs, memory and latency over batch, seq-len, input size or depth: growth exponents",
    description=(
        "Profile MODEL at each point of one or more axes (each swept alone, the others at\n"
        "their first value) and fit metric ~ value**k per metric by least squares in\n"
        "log-log space. Attention grows about quadratically in sequence length; a change\n"
        "that turns linear growth into quadratic growth shows up as a larger exponent.\n"
        "--sweep-arch sweeps a builder keyword (layer count, width): the model is rebuilt\n"
        "with each value; --arch holds other keywords fixed, and a shape option with one\n"
        "value holds that dimension."
    ),
    examples="""\
  modelprof sweep resnet18 --batch 1,8,32
  modelprof sweep vit_b_16 --batch 1,2,4 --no-latency
  modelprof sweep resnet50 --input-size 112,224,448 --no-latency --json > sweep.json
  modelprof sweep resnet18 --batch 1,2,4 --max-flops-growth 1.05
  modelprof sweep hf:llama --arch hidden_size=64 --arch intermediate_size=128 \\
      --sweep-arch num_hidden_layers=2,4,8 --seq-len 32 --no-latency --json
  modelprof sweep my_pkg.nets:make_net --sweep-arch depth=2,4,8 --input-shape 1,3,64,64""",
    add_arguments=_add_sweep_arguments,
    run=_run_sweep,
)
