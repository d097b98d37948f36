"""``modelprof compile``: graphs, graph breaks, ops per graph and recompiles under torch.compile."""

from __future__ import annotations

import argparse

from pytest_modelprof.cli._common import (
    EXIT_OK,
    Command,
    add_option,
    out,
    show,
)
from pytest_modelprof.models import resolve

__all__ = ["COMMAND"]


def parse_batch_sizes(text: str) -> list[int]:
    """``"1,2,4"`` -> ``[1, 2, 4]``: positive integers, run in that order."""
    try:
        values = [int(v) for v in text.replace(" ", "").split(",") if v]
    except ValueError:
        values = []
    if not values or any(v < 1 for v in values):
        raise argparse.ArgumentTypeError(
            f"expected positive batch sizes separated by commas, such as 1,2,4; got {text!r}"
        )
    return values


def _add_compile_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("model", help="registry name, YOLO YAML, or import path (pkg.module:factory)")
    add_option(p, "--input-shape", default=None, metavar="SHAPE",
               help="input shape such as 1,3,224,224 (default: the registry's)")
    p.add_argument("--batch", type=parse_batch_sizes, default=None, metavar="N,N,...",
                   help="batch sizes to run in order, counting recompiles after the first")
    p.add_argument("--dynamic", action="store_true",
                   help="compile with dynamic=True (default: dynamic=False, one graph per shape)")
    p.add_argument("--inductor", action="store_true",
                   help="also compile with Inductor, caches off, for kernels and compile_time "
                        "(needs a C++ compiler; takes seconds to minutes)")
    add_option(p, "--device", default=None,
               help="device to build and run on (default: cpu)")
    add_option(p, "--json",
               help="print graphs, graph_breaks, break_reasons, recompiles (and with "
                        "--inductor kernels, compile_time) as JSON")


def _run_compile(args: argparse.Namespace) -> int:
    import json

    from pytest_modelprof.compile import analyze_compile, format_compile_health

    shape: tuple[int, ...] | None = args.input_shape
    batches: list[int] = list(args.batch or [])
    if batches:
        if shape is None:
            spec = resolve(args.model)
            default = spec.default_shape_for(spec.probe())  # the model's own, as it builds
            shape = tuple(default) if default is not None else None
        if shape is not None:
            shape = (batches[0], *shape[1:])
    health = analyze_compile(
        args.model,
        input_shape=shape,
        shapes=batches[1:],
        dynamic=bool(args.dynamic),
        inductor=bool(args.inductor),
        device=args.device,
    )
    if args.json:
        data = health.model_dump(mode="json")
        if not args.inductor:  # not measured: absent, rather than null
            del data["kernels"], data["compile_time"]
        out(json.dumps(data, sort_keys=True, indent=2) + "\n")
    else:
        show(format_compile_health(health, args.model))
    return EXIT_OK


COMMAND = Command(
    name="compile",
    summary="torch.compile health: graphs, graph breaks with their locations, recompiles",
    description=(
        "Run the model once under torch.compile with a recording backend and report what\n"
        "Dynamo captured: the number of graphs, every graph break with its reason and the\n"
        "file:line in your code, the ops per graph, and the recompiles over --batch sizes\n"
        "(with --dynamic or without). --inductor also compiles with Inductor, caches off,\n"
        "for the kernel count and the compile time. Dynamo's caches are reset afterwards."
    ),
    examples="""\
  modelprof compile resnet18
  modelprof compile resnet18 --json
  modelprof compile yolov8n.yaml --input-shape 1,3,320,320 --batch 1,2,4 --dynamic
  modelprof compile my_pkg.nets:make_net --input-shape 1,3,64,64 --inductor""",
    add_arguments=_add_compile_arguments,
    run=_run_compile,
)
