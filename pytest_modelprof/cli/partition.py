"""``modelprof partition``: the fused-kernel partition of the op graph."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    pass

from pytest_modelprof.cli._common import (
    EXIT_OK,
    Command,
    add_capture_arguments,
    add_option,
    capture_of,
    machine_of,
    out,
    show,
)
from pytest_modelprof.cli.profile import PRECISION_CHOICES
from pytest_modelprof.textfit import terminal_width

__all__ = ["COMMAND"]


def _add_partition_arguments(p: argparse.ArgumentParser) -> None:
    add_capture_arguments(p)
    add_option(p, "--machine", metavar="NAME|BALANCE",
               help="hardware whose FLOPs/byte balance at --precision splits compute- from "
                    "memory-bound subgraphs: h100, a100-80gb, rtx4090, ... (a wrong name lists "
                    "them all), or a balance in FLOPs/byte (default: 10)")
    add_option(p, "--precision", choices=PRECISION_CHOICES,
               help=f"with --machine NAME: {', '.join(PRECISION_CHOICES)} (default amp: fp16 "
                    "autocast)")
    add_option(p, "--top", default=10, metavar="N",
               help="show the N subgraphs with the most FLOPs (default: 10)")
    add_option(p, "--json", help="print the full partition (every subgraph) as JSON instead")



def _run_partition(args: argparse.Namespace) -> int:
    from pytest_modelprof.analysis.partition import partition
    from pytest_modelprof.report.partition_text import render_partition_report
    from pytest_modelprof.schema import dumps_deterministic

    machine = machine_of(args)
    name, capture = capture_of(args, machine)
    report = partition(capture, machine)
    if args.json:
        out(dumps_deterministic(report.model_dump(mode="json")))
    else:
        show(render_partition_report(report, top=args.top, title=name, width=terminal_width()))
    return EXIT_OK



COMMAND = Command(
    name="partition",
    summary="fuse the op graph into kernels: subgraphs, traffic, stages, critical path",
    description=(
        "Partition the captured op graph the way a compiler fuses it (conv/linear + norm +\n"
        "activation, elementwise chains, attention blocks) and report the subgraphs: their\n"
        "kinds and fusion patterns, memory traffic and arithmetic intensity fused vs\n"
        "unfused, the stages that could run concurrently, the FLOP-weighted critical\n"
        "path, and the subgraphs with the most FLOPs."
    ),
    examples="""\
  modelprof partition resnet18
  modelprof partition yolov8n.yaml --input-shape 1,3,320,320 --top 5
  modelprof partition vit_b_16 --machine a100-80gb --precision bf16
  modelprof partition mobilenet_v2 --json > mnv2-partition.json""",
    add_arguments=_add_partition_arguments,
    run=_run_partition,
)
