"""``modelprof graph``: the module or op graph as JSON, text or DOT."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    pass

from pytest_modelprof._files import write_text_atomic
from pytest_modelprof.cli._common import (
    EXIT_OK,
    Command,
    add_capture_arguments,
    add_option,
    capture_of,
    note,
    out,
    show,
)
from pytest_modelprof.cli.bench import HOOK_OVERHEAD
from pytest_modelprof.errors import ModelprofError
from pytest_modelprof.progress import StderrProgress
from pytest_modelprof.textfit import terminal_width

__all__ = ["COMMAND"]


def _add_graph_arguments(p: argparse.ArgumentParser) -> None:
    add_capture_arguments(p)
    p.add_argument("--detail", action="store_true",
                   help="one node per op (views folded into edges) instead of one per module")
    p.add_argument("--format", choices=("json", "txt", "dot"), default="txt",
                   help="json (a document), txt (nodes, edges, stats) or dot (Graphviz); "
                        "default: txt")
    add_option(p, "--output", help="write to FILE instead of stdout")
    p.add_argument("--timed", action="store_true",
                   help="also run the model on real tensors and put each module's measured "
                        "forward time (forward_ms, children included, hooks included) on its "
                        "node (module graph only)")
    add_option(p, "--rounds", default=10,
               help="with --timed: timed forwards to average over (default: 10)")
    add_option(p, "--device", default="cpu", metavar="DEVICE",
               help="with --timed: where to run the model (default: cpu)")



def _run_graph(args: argparse.Namespace) -> int:
    from pathlib import Path

    from pytest_modelprof.exports.graph import export_graph

    if args.timed and args.detail:
        raise ModelprofError("--timed times modules, and --detail draws ops; drop one of them")
    name, capture = capture_of(args)
    forward_ms = _module_times(args) if args.timed else None
    text = export_graph(capture, detail=args.detail, fmt=args.format, name=name,
                        forward_ms=forward_ms,
                        width=100 if args.output else terminal_width())
    if args.output:
        write_text_atomic(Path(args.output), text)
        note(f"wrote {args.output} ({'detail' if args.detail else 'module'} graph, "
              f"{args.format})")
    elif args.format == "txt":
        show(text)
    else:
        out(text)
    return EXIT_OK



def _module_times(args: argparse.Namespace) -> dict[str, float]:
    """Per-module forward times of the same model on real tensors, ``{path: ms}``."""
    from pytest_modelprof.profile import real_model_and_inputs
    from pytest_modelprof.runtime.module_timing import time_modules

    module, inputs = real_model_and_inputs(args.model, input_shape=args.input_shape,
                                           device=args.device, dtype=args.dtype,
                                           **dict(args.arch))
    progress = StderrProgress(f"modelprof graph {args.model}")
    try:
        times = time_modules(module, inputs, rounds=args.rounds, warmup=2,
                             progress=lambda done, total: progress("module times", done, total))
    finally:
        progress.close()
    return times.forward_ms_by_path()


COMMAND = Command(
    name="graph",
    summary="export the module graph, or the op graph with every edge (json, txt, dot)",
    description=(
        "Export the dataflow of one capture: one node per module that ran ops, or with\n"
        "--detail one node per op with every edge (residual adds and tensor ops written in\n"
        "Python included; views are folded into edges). Text lists node ids, names, params,\n"
        "edges and stats; DOT renders with Graphviz (dot -Tsvg graph.dot -o graph.svg).\n"
        "--timed adds each module's measured forward time (forward_ms) to its node.\n\n"
        + HOOK_OVERHEAD
    ),
    examples="""\
  modelprof graph resnet18 --format txt
  modelprof graph resnet18 --detail --format dot --output resnet18.dot
  modelprof graph yolov8n.yaml --format json --output yolo-modules.json
  modelprof graph resnet18 --timed --format json --input-shape 1,3,64,64 > timed.json
  modelprof graph resnet50 --timed --rounds 20 --format dot --output resnet50-timed.dot""",
    add_arguments=_add_graph_arguments,
    run=_run_graph,
)
