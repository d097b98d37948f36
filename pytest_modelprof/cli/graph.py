"""``modelprof graph``: the module or op graph as JSON, text or DOT."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    pass

from pytest_modelprof.cli._common import (
    EXIT_OK,
    Command,
    add_capture_arguments,
    capture_of,
    note,
    out,
)

__all__ = ["COMMAND"]


def _add_graph_arguments(p: argparse.ArgumentParser) -> None:
    add_capture_arguments(p)
    p.add_argument("--detail", action="store_true",
                   help="one node per op (views folded into edges) instead of one per module")
    p.add_argument("--format", choices=("json", "txt", "dot"), default="txt",
                   help="json (a document), txt (nodes, edges, stats) or dot (Graphviz); "
                        "default: txt")
    p.add_argument("--output", "-o", metavar="FILE", help="write to FILE instead of stdout")



def _run_graph(args: argparse.Namespace) -> int:
    from pathlib import Path

    from pytest_modelprof._files import write_text_atomic
    from pytest_modelprof.exports.graph import export_graph

    name, capture = capture_of(args)
    text = export_graph(capture, detail=args.detail, fmt=args.format, name=name)
    if args.output:
        write_text_atomic(Path(args.output), text)
        note(f"wrote {args.output} ({'detail' if args.detail else 'module'} graph, "
              f"{args.format})")
    else:
        out(text)
    return EXIT_OK



COMMAND = Command(
    name="graph",
    summary="export the module graph, or the op graph with every edge (json, txt, dot)",
    description=(
        "Export the dataflow of one capture: one node per module that ran ops, or with\n"
        "--detail one node per op with every edge (residual adds and tensor ops written in\n"
        "Python included; views are folded into edges). Text lists node ids, names, params,\n"
        "edges and stats; DOT renders with Graphviz (dot -Tsvg graph.dot -o graph.svg)."
    ),
    examples="""\
  modelprof graph resnet18 --format txt
  modelprof graph resnet18 --detail --format dot --output resnet18.dot
  modelprof graph yolov8n.yaml --format json --output yolo-modules.json""",
    add_arguments=_add_graph_arguments,
    run=_run_graph,
)
