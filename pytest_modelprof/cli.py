"""The ``modelprof`` command line: one subcommand per research profiler we replace, and more.

Each subcommand is one :class:`Command` in :data:`COMMANDS`: a name, a one-line summary, its
examples, a function that adds its options and a function that runs it. Adding a subcommand
means writing those two functions and one table entry. Errors this package raises on purpose
(:class:`ModelprofError`) end as one ``modelprof: error: ...`` line on stderr with exit code 2;
argparse reports bad option values the same way. Heavy imports (torch) happen inside the
commands, so ``--help`` and ``--version`` stay fast.
"""

from __future__ import annotations

import argparse
import ast
import difflib
import re
import shutil
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pytest_modelprof import __version__
from pytest_modelprof.errors import ModelNotFoundError, ModelprofError

if TYPE_CHECKING:
    from pytest_modelprof.machines import Machine

__all__ = ["COMMANDS", "Command", "build_parser", "main"]

PROG = "modelprof"
EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


@dataclass(frozen=True)
class Command:
    """One subcommand: its help texts, its options and what it does (returns the exit code)."""

    name: str
    summary: str
    description: str
    examples: str
    add_arguments: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace], int]


# -- option types (argparse calls these; a ValueError/ArgumentTypeError becomes a usage error) --

def parse_shape(text: str) -> tuple[int, ...]:
    """``"1,3,224,224"`` (or ``1x3x224x224``, ``"1 3 224 224"``) -> ``(1, 3, 224, 224)``."""
    parts = [p for p in re.split(r"[,x\s]+", text.strip().strip("()[]").strip()) if p]
    try:
        shape = tuple(int(p) for p in parts)
    except ValueError:
        shape = ()
    if not shape or any(s <= 0 for s in shape):
        raise argparse.ArgumentTypeError(
            f"expected positive integers separated by commas, such as 1,3,224,224; got {text!r}"
        )
    return shape


def parse_machine(text: str) -> Machine:
    """A preset name (``a100-bf16``) or a balance in FLOPs per byte (``10``)."""
    from pytest_modelprof.machines import resolve_machine

    try:
        return resolve_machine(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def parse_device(text: str) -> str:
    """A torch device string: ``cpu``, ``cuda``, ``cuda:1``, ``meta``."""
    import torch

    try:
        torch.device(text)
    except RuntimeError:
        raise argparse.ArgumentTypeError(
            f"unknown device {text!r}; use e.g. cpu, cuda, cuda:1 or meta"
        ) from None
    return text


DTYPES = ("float32", "float16", "bfloat16", "float64")


def parse_dtype(text: str) -> str:
    name = text.strip().removeprefix("torch.")
    aliases = {"fp32": "float32", "fp16": "float16", "half": "float16", "bf16": "bfloat16",
               "fp64": "float64", "double": "float64", "float": "float32"}
    name = aliases.get(name, name)
    if name not in DTYPES:
        raise argparse.ArgumentTypeError(f"unknown dtype {text!r}; use one of {', '.join(DTYPES)}")
    return name


def parse_arch(text: str) -> tuple[str, Any]:
    """``image_size=518`` -> ``("image_size", 518)``; values are Python literals, else strings."""
    key, sep, raw = text.partition("=")
    key = key.strip()
    if not sep or not key.isidentifier():
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE such as image_size=518; got {text!r}")
    try:
        value: Any = ast.literal_eval(raw.strip())
    except (ValueError, SyntaxError):
        value = raw.strip()
    return key, value


def parse_top(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected a number of layers >= 0; got {text!r}")
    return value


def parse_tolerance(text: str) -> float:
    """``0.05`` or ``5%`` -> ``0.05``."""
    raw = text.strip()
    try:
        value = float(raw[:-1]) / 100 if raw.endswith("%") else float(raw)
    except ValueError:
        value = -1.0
    if not value >= 0:
        raise argparse.ArgumentTypeError(
            f"expected a relative tolerance >= 0 such as 0.05 or 5%; got {text!r}"
        )
    return value


def parse_names(text: str) -> list[str]:
    names = [n.strip() for n in text.split(",") if n.strip()]
    if not names:
        raise argparse.ArgumentTypeError(f"expected comma-separated model names; got {text!r}")
    return names


# -- shared helpers -----------------------------------------------------------------------------

def _out(text: str) -> None:
    sys.stdout.write(text)


def _note(text: str) -> None:
    """Progress and side notes go to stderr, so stdout stays a clean report (or JSON)."""
    print(text, file=sys.stderr, flush=True)


def _suggest(name: str) -> str:
    """Close model names for an error message (empty when the registry has none)."""
    try:
        from pytest_modelprof.models import list_models

        known = [n for names in list_models().values() for n in names]
    except Exception:  # the suggestion is a courtesy; never hide the real error behind it
        return ""
    close = difflib.get_close_matches(name, known, n=5, cutoff=0.6)
    close += [n for n in known if name.lower() in n.lower() and n not in close][: 5 - len(close)]
    return f"; did you mean: {', '.join(close)}?" if close else ""


def _resolve_names(names: Sequence[str]) -> None:
    """Resolve every name before any slow work, so a typo fails at once."""
    from pytest_modelprof.models import resolve

    for name in names:
        resolve(name)


# -- modelprof profile --------------------------------------------------------------------------

def _add_profile_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("model", metavar="MODEL", help="a model name (see 'modelprof list')")
    p.add_argument("--input-shape", type=parse_shape, metavar="SHAPE",
                   help="input tensor shape, e.g. 1,3,224,224 (default: the model's own)")
    p.add_argument("--seq-len", type=int, metavar="N",
                   help="tokens per sequence of a text model (hf:gpt2 ...; default 128)")
    p.add_argument("--device", type=parse_device, metavar="DEVICE",
                   help="device for real-tensor captures (cpu, cuda; with --mode real or when "
                        "auto falls back); meta forces meta tensors")
    p.add_argument("--dtype", type=parse_dtype, metavar="DTYPE",
                   help=f"cast weights and inputs to {', '.join(DTYPES)}")
    p.add_argument("--mode", choices=("auto", "meta", "fake", "real"), default="auto",
                   help="tensors to capture on (default: auto, meta with a real-tensor fallback)")
    p.add_argument("--backward", action="store_true",
                   help="include the backward pass of a sum-of-outputs loss")
    p.add_argument("--machine", type=parse_machine, metavar="NAME|BALANCE",
                   help="machine whose FLOPs/byte balance splits compute- from memory-bound "
                        "(a preset such as a100-bf16, or a number; default: generic, 10)")
    p.add_argument("--strict", action="store_true",
                   help="fail (exit 2) when an op without a cost formula ran")
    p.add_argument("--arch", type=parse_arch, action="append", default=[], metavar="KEY=VALUE",
                   help="builder keyword argument, repeatable (e.g. --arch image_size=518)")
    p.add_argument("--no-warmup", action="store_true",
                   help="keep the first capture even if that forward initialised lazy state "
                        "(by default such a model, like YOLO, is captured a second time)")
    p.add_argument("--top", type=parse_top, default=10, metavar="N",
                   help="show the N layers with the most FLOPs (default: 10; 0 hides them)")
    p.add_argument("--verbose", "-v", action="store_true",
                   help="show every module as a tree with the totals of its subtree")
    p.add_argument("--showshape", action="store_true", help="add each layer's output shape")
    p.add_argument("--output", "-o", metavar="FILE",
                   help="also write the profile to FILE.json (full document) or FILE.csv "
                        "(one row per layer)")
    p.add_argument("--json", action="store_true",
                   help="print the JSON document to stdout instead of the report")


def _run_profile(args: argparse.Namespace) -> int:
    from pytest_modelprof.export import write_profile
    from pytest_modelprof.profile import profile_model
    from pytest_modelprof.report.terminal import render_profile

    arch = dict(args.arch)
    input_shape = args.input_shape
    if args.seq_len is not None:  # the model's default shape with (batch, seq_len)'s dim 1 set
        from pytest_modelprof.models import resolve

        if input_shape is not None:
            raise ModelprofError("give --seq-len or --input-shape, not both")
        input_shape = resolve(args.model).input_shape_for(seq_len=args.seq_len)
    profile = profile_model(
        args.model,
        input_shape=input_shape,
        device=args.device,
        dtype=args.dtype,
        mode=args.mode,
        include_backward=args.backward,
        strict=args.strict,
        machine=args.machine,
        # None: capture again only if the first forward initialised lazy state (YOLO).
        warmup=False if args.no_warmup else None,
        **arch,
    )
    if args.json:
        _out(profile.to_json())
    else:
        _out(render_profile(profile, top=args.top, verbose=args.verbose,
                            show_shape=args.showshape))
    if args.output:
        kind = write_profile(profile, args.output)
        _note(f"wrote {args.output} ({kind})")
    return EXIT_OK


# -- modelprof list -----------------------------------------------------------------------------

def _add_list_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--filter", "-f", metavar="TEXT",
                   help="only names containing TEXT (case-insensitive)")
    p.add_argument("--json", action="store_true",
                   help="print {source: [names]} as JSON instead of columns")


def _run_list(args: argparse.Namespace) -> int:
    from pytest_modelprof.models import list_models
    from pytest_modelprof.report.terminal import render_model_list
    from pytest_modelprof.schema import dumps_deterministic

    groups = list_models(filter=args.filter)
    if args.json:
        _out(dumps_deterministic({k: sorted(v) for k, v in groups.items()}))
        return EXIT_OK
    width = max(40, shutil.get_terminal_size((100, 24)).columns)
    _out(render_model_list(groups, width=width, filter=args.filter))
    return EXIT_OK


# -- modelprof fvcore ---------------------------------------------------------------------------

def _add_fvcore_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("names", nargs="*", metavar="MODEL", help="model names (or use --models)")
    p.add_argument("--models", type=parse_names, action="append", default=[], metavar="A,B,...",
                   help="comma-separated model names")
    p.add_argument("--input-shape", type=parse_shape, metavar="SHAPE",
                   help="input shape for every model (default: each model's own)")
    p.add_argument("--tolerance", type=parse_tolerance, default=0.05, metavar="REL",
                   help="largest accepted |ours - fvcore| / fvcore, e.g. 0.05 or 5%% "
                        "(default: 0.05); exit 1 above it")
    p.add_argument("--verbose", "-v", action="store_true",
                   help="also list fvcore's count per operator for each model")
    p.add_argument("--json", action="store_true", help="print the comparisons as JSON")


def _run_fvcore(args: argparse.Namespace) -> int:
    from pytest_modelprof.fvcore_compare import (
        FvcoreComparison,
        compare_with_fvcore,
        load_fvcore,
    )
    from pytest_modelprof.report.terminal import render_fvcore
    from pytest_modelprof.schema import dumps_deterministic

    names = list(dict.fromkeys([*args.names, *(n for group in args.models for n in group)]))
    if not names:
        raise ModelprofError("name at least one model: modelprof fvcore --models resnet18,resnet50")
    load_fvcore()  # a missing extra fails once, before any model is built
    _resolve_names(names)
    results: list[FvcoreComparison] = []
    failures: dict[str, str] = {}
    for i, name in enumerate(names, start=1):
        if len(names) > 1:
            _note(f"[{i}/{len(names)}] {name} ...")
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
        _out(dumps_deterministic(doc))
    else:
        _out(render_fvcore(results, tolerance=args.tolerance, failures=failures,
                           verbose=args.verbose))
    over = [c.model for c in results if not c.within(args.tolerance)]
    return EXIT_FAILED if over or failures else EXIT_OK


def parse_axis_sizes(text: str) -> list[int]:
    """``"1,8,32"`` -> ``[1, 8, 32]`` (imported on use: sweep.py imports torch)."""
    from pytest_modelprof.sweep import axis_values_arg

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
    from pytest_modelprof.sweep import check_growth, format_sweep, sweep

    over = {k: v for k, v in (("batch", args.batch), ("seq_len", args.seq_len),
                              ("input_size", args.input_size)) if v}
    if not over:
        print(f"{PROG} sweep: error: give --batch, --seq-len or --input-size", file=sys.stderr)
        return EXIT_USAGE
    _resolve_names([args.model])
    result = sweep(args.model, over=over, input_shape=args.input_shape,
                   latency=not args.no_latency, rounds=args.rounds)
    _out(result.model_dump_json(indent=2) if args.json else format_sweep(result))
    violations = check_growth(result, {"max_flops_growth_exponent": args.max_flops_growth_exponent})
    for violation in violations:
        print(f"{PROG} sweep: FAIL {violation.message}", file=sys.stderr)
    return EXIT_FAILED if violations else EXIT_OK


# -- modelprof compare / merge / report ----------------------------------------------------------

def _add_report_outputs(p: argparse.ArgumentParser) -> None:
    p.add_argument("--html", metavar="FILE.html", help="write the HTML diff report")
    p.add_argument("--markdown", metavar="FILE.md", help="write the diff report as Markdown")
    p.add_argument("--json", metavar="FILE.json", dest="json_out",
                   help="write the comparison as a results file (re-render it with 'report')")


def _write_reports(results: Any, args: argparse.Namespace) -> None:
    from pathlib import Path

    from pytest_modelprof.report.session import write_outputs

    def path(value: str | None) -> Path | None:
        return Path(value) if value else None

    for written in write_outputs(results, html=path(args.html), json=path(args.json_out),
                                 markdown=path(args.markdown)):
        _note(f"wrote {written}")


def _add_compare_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("old", metavar="OLD.json", help="the baseline side: a profile, a baseline "
                   "file or a results file")
    p.add_argument("new", metavar="NEW.json", help="the current side, of the same kind as OLD")
    p.add_argument("--max-delta", metavar="TOL", default="exact",
                   help="tolerance of every counted metric, as in the marker: exact (default, "
                        "the gate's own default), 5%%, 0.05 or ignore")
    p.add_argument("--limit", action="append", default=[], metavar="KEY=VALUE",
                   help="one limit in the marker's grammar, repeatable, over --max-delta: "
                        "max_flops_delta=10%%, max_params=30M, max_ai_drop=5%%")
    p.add_argument("--top", type=parse_top, default=10, metavar="N",
                   help="layer changes shown per profile (default: 10)")
    _add_report_outputs(p)


def _compare_limits(args: argparse.Namespace) -> Any:
    from pytest_modelprof.baseline.metrics import METRICS
    from pytest_modelprof.baseline.tolerance import Ignore
    from pytest_modelprof.baseline.tolerance import parse_tolerance as parse_limit_tolerance
    from pytest_modelprof.settings import Limits

    try:
        tolerance = parse_limit_tolerance(args.max_delta)
    except ValueError as exc:
        raise ModelprofError(f"--max-delta: {exc}") from None
    # Counted metrics only (latency is ignored by default: noise in a profile-to-profile diff),
    # and not marked explicit, so a metric neither side measures is left out, not "unmeasured".
    limits = Limits(tolerances={
        m.name: tolerance for m in METRICS if not isinstance(m.default_delta, Ignore)
    })
    extra: dict[str, object] = {}
    for item in args.limit:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ModelprofError(f"--limit: expected KEY=VALUE such as max_flops_delta=10%, "
                                 f"got {item!r}")
        extra[key.strip()] = value.strip()
    unknown = sorted(k for k in extra if k not in _limit_names())
    if unknown:
        raise ModelprofError(f"--limit: unknown limit {', '.join(unknown)}; use one of "
                             f"{', '.join(_limit_names())}")
    return limits.with_values(extra, "--limit")


def _limit_names() -> list[str]:
    from pytest_modelprof.baseline.metrics import LIMIT_KEYS

    return sorted(LIMIT_KEYS)


def _run_compare(args: argparse.Namespace) -> int:
    from pytest_modelprof.report.text import render_diff
    from pytest_modelprof.report.view import build_view
    from pytest_modelprof.results import compare_documents, load_document

    limits = _compare_limits(args)
    results = compare_documents(load_document(args.old), load_document(args.new), limits)
    width = max(60, shutil.get_terminal_size((100, 24)).columns)
    _out(render_diff(build_view(results, title="modelprof compare"), top=args.top, width=width))
    _write_reports(results, args)
    return EXIT_FAILED if any(t.status == "regressed" for t in results.tests) else EXIT_OK


def _add_merge_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("files", nargs="+", metavar="SHARD.json", help="results files to join")
    p.add_argument("--output", "-o", required=True, metavar="ALL.json",
                   help="where to write the merged results")
    p.add_argument("--html", metavar="FILE.html", help="also render the merged HTML report")
    p.add_argument("--markdown", metavar="FILE.md", help="also render the merged Markdown")


def _run_merge(args: argparse.Namespace) -> int:
    from pytest_modelprof.results import RunResults, load_document, merge_results

    parts = []
    for name in args.files:
        doc = load_document(name)
        if not isinstance(doc, RunResults):
            raise ModelprofError(f"{name}: not a results file (write one with --modelprof-json)")
        parts.append((name, doc))
    merged = merge_results(parts)
    args.json_out = args.output
    _write_reports(merged, args)
    return EXIT_FAILED if any(t.failed for t in merged.tests) else EXIT_OK


def _add_report_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("results", metavar="RESULTS.json", help="a results file (--modelprof-json)")
    p.add_argument("--html", metavar="FILE.html", help="write the HTML report")
    p.add_argument("--markdown", metavar="FILE.md", help="write the Markdown report")
    p.add_argument("--top", type=parse_top, default=10, metavar="N",
                   help="layer changes printed per profile (default: 10)")


def _run_report(args: argparse.Namespace) -> int:
    from pytest_modelprof.report.text import render_diff
    from pytest_modelprof.report.view import build_view
    from pytest_modelprof.results import RunResults, load_document

    doc = load_document(args.results)
    if not isinstance(doc, RunResults):
        raise ModelprofError(f"{args.results}: not a results file (write one with "
                             f"--modelprof-json, or use 'modelprof compare' for two profiles)")
    args.json_out = None
    if not (args.html or args.markdown):
        width = max(60, shutil.get_terminal_size((100, 24)).columns)
        _out(render_diff(build_view(doc), top=args.top, width=width))
    _write_reports(doc, args)
    return EXIT_FAILED if any(t.failed for t in doc.tests) else EXIT_OK


# -- modelprof partition / graph ----------------------------------------------------------------

def _add_capture_arguments(p: argparse.ArgumentParser) -> None:
    """The options that say what to capture: shared by ``partition`` and ``graph``."""
    p.add_argument("model", metavar="MODEL", help="a model name (see 'modelprof list')")
    p.add_argument("--input-shape", type=parse_shape, metavar="SHAPE",
                   help="input tensor shape, e.g. 1,3,224,224 (default: the model's own)")
    p.add_argument("--dtype", type=parse_dtype, metavar="DTYPE",
                   help=f"cast weights and inputs to {', '.join(DTYPES)}")
    p.add_argument("--mode", choices=("auto", "meta", "fake", "real"), default="auto",
                   help="tensors to capture on (default: auto, meta with a real-tensor fallback)")
    p.add_argument("--arch", type=parse_arch, action="append", default=[], metavar="KEY=VALUE",
                   help="builder keyword argument, repeatable (e.g. --arch image_size=518)")


def _capture_of(args: argparse.Namespace, machine: Machine | None = None) -> tuple[str, Any]:
    from pytest_modelprof.profile import profile_model

    profile = profile_model(args.model, input_shape=args.input_shape, dtype=args.dtype,
                            mode=args.mode, machine=machine, **dict(args.arch))
    if profile.capture_record is None:  # pragma: no cover - profile_model always keeps it
        raise ModelprofError(f"{args.model}: the profile kept no op capture")
    return profile.model, profile.capture_record


def _add_partition_arguments(p: argparse.ArgumentParser) -> None:
    _add_capture_arguments(p)
    p.add_argument("--machine", type=parse_machine, metavar="NAME|BALANCE",
                   help="machine whose FLOPs/byte balance splits compute- from memory-bound "
                        "subgraphs (a preset such as a100-bf16, or a number; default: generic)")
    p.add_argument("--top", type=parse_top, default=10, metavar="N",
                   help="show the N subgraphs with the most FLOPs (default: 10)")
    p.add_argument("--json", action="store_true",
                   help="print the full partition (every subgraph) as JSON instead")


def _run_partition(args: argparse.Namespace) -> int:
    from pytest_modelprof.analysis.partition import partition, render_partition_report
    from pytest_modelprof.schema import dumps_deterministic

    name, capture = _capture_of(args, args.machine)
    report = partition(capture, args.machine)
    if args.json:
        _out(dumps_deterministic(report.model_dump(mode="json")))
    else:
        _out(render_partition_report(report, top=args.top, title=name))
    return EXIT_OK


def _add_graph_arguments(p: argparse.ArgumentParser) -> None:
    _add_capture_arguments(p)
    p.add_argument("--detail", action="store_true",
                   help="one node per op (views folded into edges) instead of one per module")
    p.add_argument("--format", choices=("json", "txt", "dot"), default="txt",
                   help="json (a document), txt (nodes, edges, stats) or dot (Graphviz); "
                        "default: txt")
    p.add_argument("--output", "-o", metavar="FILE", help="write to FILE instead of stdout")


def _run_graph(args: argparse.Namespace) -> int:
    from pathlib import Path

    from pytest_modelprof._files import write_text_atomic
    from pytest_modelprof.graph_export import export_graph

    name, capture = _capture_of(args)
    text = export_graph(capture, detail=args.detail, fmt=args.format, name=name)
    if args.output:
        write_text_atomic(Path(args.output), text)
        _note(f"wrote {args.output} ({'detail' if args.detail else 'module'} graph, "
              f"{args.format})")
    else:
        _out(text)
    return EXIT_OK


# -- the command table --------------------------------------------------------------------------

COMMANDS: tuple[Command, ...] = (
    Command(
        name="profile",
        summary="profile one model: FLOPs/MACs, memory, intensity, bottlenecks, top layers",
        description=(
            "Profile a model from one ATen-level capture (meta tensors when possible) and print\n"
            "a summary, the op-family breakdown, the bottleneck analysis against a machine\n"
            "balance, the costliest layers, and every op that could not be counted."
        ),
        examples="""\
  modelprof profile resnet50
  modelprof profile resnet18 --input-shape 1,3,64,64 --top 5 --showshape
  modelprof profile vit_b_16 --verbose                 # every module, as a tree
  modelprof profile mobilenet_v2 --output mnv2.json    # or .csv: one row per layer
  modelprof profile resnet50 --machine a100-bf16 --dtype bfloat16
  modelprof profile dinov2_vits14 --arch image_size=518 --json > dino.json""",
        add_arguments=_add_profile_arguments,
        run=_run_profile,
    ),
    Command(
        name="list",
        summary="list the model names 'profile' and 'fvcore' accept, grouped by source",
        description="List every known model name, grouped by where it comes from.",
        examples="""\
  modelprof list
  modelprof list --filter resnet
  modelprof list --json""",
        add_arguments=_add_list_arguments,
        run=_run_list,
    ),
    Command(
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
    ),
    Command(
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
    ),
    Command(
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
  modelprof partition vit_b_16 --machine a100-bf16
  modelprof partition mobilenet_v2 --json > mnv2-partition.json""",
        add_arguments=_add_partition_arguments,
        run=_run_partition,
    ),
    Command(
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
    ),
    Command(
        name="compare",
        summary="diff two profiles (or two results files): metrics, layer changes; exit 1 if worse",
        description=(
            "Judge NEW against OLD as the pytest gate would, with OLD as the baseline. OLD and\n"
            "NEW are two profiles (modelprof profile -o x.json), two baseline files or two\n"
            "results files (--modelprof-json; tests are matched by id). Prints the metrics and\n"
            "the layers that changed most. Counted metrics are exact by default, like the gate:\n"
            "any growth is a regression. Exit code 1 when anything regressed beyond its limit."
        ),
        examples="""\
  modelprof compare old.json new.json
  modelprof compare old.json new.json --max-delta 5% --html diff.html --markdown diff.md
  modelprof compare main-results.json pr-results.json --limit max_params_delta=0
  modelprof compare old.json new.json --limit max_flops=5G --top 20""",
        add_arguments=_add_compare_arguments,
        run=_run_compare,
    ),
    Command(
        name="merge",
        summary="join the results files of CI shards into one (and render it)",
        description=(
            "Join results files written by --modelprof-json in a sharded CI matrix. A test in\n"
            "two shards, or shards from two commits, is an error. Exit code 1 when a merged\n"
            "profile failed its gate."
        ),
        examples="""\
  modelprof merge shard-*.json -o all.json
  modelprof merge shard-*.json -o all.json --html report.html --markdown report.md""",
        add_arguments=_add_merge_arguments,
        run=_run_merge,
    ),
    Command(
        name="report",
        summary="re-render a results file as HTML or Markdown (or print it)",
        description=(
            "Render a results file (--modelprof-json, modelprof merge) again, e.g. after\n"
            "downloading it from CI. Without --html or --markdown it prints the diff.\n"
            "Exit code 1 when a profile in it failed its gate."
        ),
        examples="""\
  modelprof report results.json --html report.html
  modelprof report results.json --markdown report.md
  modelprof report results.json --top 5""",
        add_arguments=_add_report_arguments,
        run=_run_report,
    ),
)


def build_parser() -> argparse.ArgumentParser:
    """The top-level parser with one subparser per entry of :data:`COMMANDS`."""
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="Exact FLOPs/MACs, memory traffic and bottlenecks of PyTorch models.",
        epilog="Examples:\n" + "\n".join(
            c.examples.splitlines()[0] for c in COMMANDS
        ) + f"\n\nRun '{PROG} COMMAND --help' for a command's options and examples.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"{PROG} {__version__}")
    sub = parser.add_subparsers(title="commands", metavar="COMMAND", dest="command")
    for command in COMMANDS:
        p = sub.add_parser(
            command.name,
            help=command.summary,
            description=command.description,
            epilog="Examples:\n" + command.examples,
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        command.add_arguments(p)
        p.set_defaults(run=command.run)
    return parser


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split())


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``modelprof`` with ``argv`` (default ``sys.argv[1:]``); returns the exit code."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help, --version and usage errors
        return exc.code if isinstance(exc.code, int) else EXIT_USAGE
    if getattr(args, "run", None) is None:
        parser.print_help(sys.stderr)
        return EXIT_USAGE
    try:
        code: int = args.run(args)
        return code
    except ModelNotFoundError as exc:
        message = _one_line(exc)
        if "did you mean" not in message.lower():
            message += _suggest(getattr(args, "model", "") or "")
        print(f"{PROG}: error: {message}", file=sys.stderr)
        return EXIT_USAGE
    except ModelprofError as exc:
        print(f"{PROG}: error: {_one_line(exc)}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # `modelprof list | head`
        return EXIT_OK


if __name__ == "__main__":
    raise SystemExit(main())
