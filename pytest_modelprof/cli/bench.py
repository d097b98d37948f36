"""``modelprof bench``: forward, backward and training-step times, memory, FLOPs, hardware."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from pytest_modelprof.cli._common import (
    DTYPES,
    EXIT_FAILED,
    EXIT_OK,
    PROG,
    Command,
    add_option,
    out,
    parse_positive,
    parse_top,
    resolve_names,
    show,
)
from pytest_modelprof.cli.profile import PRECISION_CHOICES
from pytest_modelprof.errors import ModelprofError, SettingsError
from pytest_modelprof.instructions import InstructionServer, find_valgrind
from pytest_modelprof.optimizers import OPTIMIZER_ARGS
from pytest_modelprof.progress import StderrProgress, heartbeat
from pytest_modelprof.textfit import Column, fit_line, layout_table, terminal_width
from pytest_modelprof.units import format_bytes, format_count

if TYPE_CHECKING:
    from pytest_modelprof.runtime.bench_document import BenchReport, BenchRun

__all__ = ["COMMAND", "HOOK_OVERHEAD"]


#: Quoted in --help; measured by benchmarks/bench_module_timing.py (figures in BENCHMARKS.md).
HOOK_OVERHEAD = (
    "Module times come from forward hooks on every module, and their cost is included:\n"
    "under 1 % of resnet50's forward at 224 px on one CPU thread (183 hooked calls, about\n"
    "5 microseconds each), about 2 % at 64 px (benchmarks/bench_module_timing.py)."
)


def _add_bench_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("model", metavar="MODEL", help="a model name (see 'modelprof list')")
    add_option(p, "--input-shape", metavar="SHAPE",
               help="input tensor shape, e.g. 1,3,224,224 (default: the model's own)")
    p.add_argument("--batch", type=parse_positive, metavar="N",
                   help="batch size: replaces the first dimension of the input shape")
    add_option(p, "--device", default="cpu", metavar="DEVICE",
               help="where to build and run the model: cpu (default), cuda, cuda:1")
    add_option(p, "--dtype", metavar="DTYPE",
               help=f"cast weights and inputs to {', '.join(DTYPES)} (default: float32)")
    add_option(p, "--rounds", default=20,
               help="timed rounds per measurement (default: 20)")
    p.add_argument("--warmup", type=parse_top, default=3, metavar="N",
                   help="untimed rounds before them (default: 3)")
    add_option(p, "--optimizer", choices=tuple(OPTIMIZER_ARGS), default="sgd-momentum",
               help="optimizer of the training step and of the memory measurement: "
                    f"{', '.join(OPTIMIZER_ARGS)} (sgd: torch.optim.SGD's defaults, no momentum; "
                    "default sgd-momentum, 0.9)")
    p.add_argument("--threads", type=parse_positive, metavar="N",
                   help="torch intra-op threads while measuring (default: torch's own setting)")
    add_option(p, "--arch",
               help="builder keyword arguments, repeatable or comma-separated (e.g. --arch "
                    "num_classes=10)")
    add_option(p, "--top", default=10, metavar="N",
               help="list the N modules with the most forward time of their own "
                    "(default: 10; 0 skips timing modules)")
    p.add_argument("--instructions", action="store_true",
                   help="also count the CPU instructions per call of the forward, backward and "
                        "training step under valgrind's callgrind (needs valgrind; starting it "
                        "costs about a minute); --json adds instructions.{forward,backward,"
                        "training_step,calls}")
    p.add_argument("--instruction-calls", type=parse_positive, default=5, metavar="N",
                   help="measured calls per phase for --instructions, after 10 unmeasured ones "
                        "(default: 5; the figure is per call)")
    add_option(p, "--machine",
               help="also predict the forward's time on this GPU from the exact counts (h100, "
                    "a100-80gb, rtx4090, ... a wrong name lists them all), beside the time "
                    "measured here; --json adds predicted.{machine,precision,forward_ms,"
                    "samples_per_s}")
    add_option(p, "--precision", choices=PRECISION_CHOICES,
               help=f"with --machine: {', '.join(PRECISION_CHOICES)} (default amp: fp16 "
                    "autocast)")
    p.add_argument("--against", metavar="REF",
                   help="also time the forward at git commit REF (a branch, tag or hash, checked "
                        "out in a temporary worktree) and here, in alternating rounds in one "
                        "process; exit 1 when this tree is slower beyond 8 %%; --json adds "
                        "against.{ref,commit,verdict,slowdown,ci_low,ci_high,rounds,base_ms,"
                        "head_ms,reason}")
    add_option(p, "--json",
               help="print only the JSON document to stdout (progress stays on stderr); "
                        "keys: runtime.{forward,backward,training_step}.{mean_ms,std_ms,min_ms,"
                        "max_ms,median_ms,rounds}, memory.peak_bytes, memory.breakdown.{"
                        "parameters,gradients,optimizer_state,activations}, flops.total, "
                        "flops.breakdown, hardware.{cpu,cores,torch,cuda_available,gpu_name,"
                        "gpu_memory_bytes}, timestamp")


def _run_bench(args: argparse.Namespace) -> int:
    resolve_names([args.model])  # a misspelled name fails before torch is imported
    from pytest_modelprof.runtime.bench import bench

    if args.instructions:
        if str(args.device) != "cpu":
            raise ModelprofError(
                f"--instructions counts what the CPU executes; leave --device={args.device} out"
            )
        find_valgrind()  # before minutes of timing: no valgrind is one clear error
    progress = StderrProgress(f"modelprof bench {args.model}")
    try:
        run = bench(
            args.model,
            input_shape=args.input_shape,
            batch=args.batch,
            device=args.device,
            dtype=args.dtype,
            rounds=args.rounds,
            warmup=args.warmup,
            optimizer=args.optimizer,
            threads=args.threads,
            # The document has no module times: a --json run does not spend time on them.
            module_rounds=None if args.json or args.top == 0 else args.rounds,
            progress=progress,
            **dict(args.arch),
        )
    except ValueError as exc:  # bad combinations of options, reported like usage errors
        raise ModelprofError(str(exc)) from exc
    except ModelprofError as exc:
        raise ModelprofError(f"{exc}{_batch_hint(str(exc), args)}") from exc
    finally:
        progress.close()
    run, regressed = _with_extras(run, args)
    if args.json:  # the text report says it; --json keeps stdout a document, so stderr
        for warning in busy_warnings(run.report):
            print(f"{PROG} bench: warning: {warning}", file=sys.stderr)
    if args.json:
        out(run.report.to_json())
    else:
        show(render_bench(run, top=args.top, width=terminal_width()))
    return EXIT_FAILED if regressed else EXIT_OK


def _with_extras(run: BenchRun, args: argparse.Namespace) -> tuple[BenchRun, bool]:
    """The run with what its options add (instructions, a prediction, a paired comparison),
    and whether the comparison found this tree slower."""
    if args.instructions:
        run = _with_instructions(run, args)
    if args.machine is not None or args.precision is not None:
        run = _with_prediction(run, args)
    if args.against:
        return _with_against(run, args)
    return run, False


def _with_prediction(run: BenchRun, args: argparse.Namespace) -> BenchRun:
    """The run with its forward's time predicted on ``--machine`` at ``--precision``."""
    from dataclasses import replace

    from pytest_modelprof.machines import machine_spec
    from pytest_modelprof.predict import predict_profile
    from pytest_modelprof.profile import profile_with_capture

    if args.machine is None:
        raise SettingsError(f"--precision {args.precision} needs --machine naming a GPU")
    gpu = machine_spec(args.machine).name
    shape = run.input_shapes[0] if len(run.input_shapes) == 1 else None
    made = profile_with_capture(args.model, input_shape=shape, mode="meta", **dict(args.arch))
    p = predict_profile(made, gpu, precision=args.precision or "amp", top=3)
    data = {"machine": p.machine, "precision": p.precision, "forward_ms": round(p.forward_ms, 6),
            "samples_per_s": round(p.samples_per_s, 3)}
    return replace(run, report=run.report.model_copy(update={"predicted": data}))


def _with_against(run: BenchRun, args: argparse.Namespace) -> tuple[BenchRun, bool]:
    """The run with its forward timed against ``--against`` paired, and whether it regressed."""
    from dataclasses import replace
    from pathlib import Path

    from pytest_modelprof.history.paired import time_against

    if run.dtype != "float32":
        raise ModelprofError(f"--against times float32 weights; leave --dtype={run.dtype} out")
    print(f"{PROG} bench {args.model}: timing the forward at {args.against} and here, paired "
          "(a temporary worktree) ...", file=sys.stderr)
    shape = run.input_shapes[0] if len(run.input_shapes) == 1 else args.input_shape
    timing, comparison = time_against(
        args.model, args.against, root=Path.cwd(), input_shape=shape, device=str(args.device),
        kwargs=dict(args.arch),
    )
    data = {"ref": args.against, "commit": timing.base, "verdict": comparison.verdict,
            "slowdown": comparison.slowdown, "ci_low": comparison.ci_low,
            "ci_high": comparison.ci_high, "rounds": timing.rounds,
            "base_ms": comparison.baseline_ms, "head_ms": comparison.current_ms,
            "reason": comparison.describe()}
    report = run.report.model_copy(update={"against": data})
    return replace(run, report=report), comparison.verdict == "regressed"


def _batch_hint(message: str, args: argparse.Namespace) -> str:
    """The option that fixes a batch too small for train-mode batch norm, with the user's shape."""
    if "more than 1 value per channel" not in message:
        return ""
    if args.input_shape:
        shape = ",".join(str(d) for d in (max(2, args.input_shape[0]), *args.input_shape[1:]))
        return f" (e.g. --input-shape {shape})"
    return " (e.g. --batch 2)"


def _with_instructions(run: BenchRun, args: argparse.Namespace) -> BenchRun:
    """The run with its instruction counts (one callgrind process for the three phases)."""
    from dataclasses import replace

    # About a minute of CPU to start; wall time grows with the machine's load, so the phase
    # and its elapsed time are said every half minute while it runs.
    shape = run.input_shapes[0] if len(run.input_shapes) == 1 else args.input_shape
    label = f"{PROG} bench {args.model}: instructions under callgrind"
    with heartbeat(label, "starting valgrind (about a minute of CPU)") as phase:
        with InstructionServer() as server:
            phase("counting forward, backward and training step")
            counts = server.measure(
                args.model, input_shape=shape, phases=("forward", "backward", "training_step"),
                calls=args.instruction_calls, arch=dict(args.arch),
                dtype=None if run.dtype == "float32" else run.dtype,
            )
    data = counts.model_dump(mode="json")
    return replace(run, report=run.report.model_copy(update={"instructions": data}))


def busy_warnings(doc: BenchReport) -> list[str]:
    """A line per phase whose rounds spread as on a busy machine: the median far above the
    fastest round, or a standard deviation of half the median (other work took the cores)."""
    lines = []
    for label, s in (("forward", doc.runtime.forward), ("backward", doc.runtime.backward),
                     ("training step", doc.runtime.training_step)):
        if s.rounds < 2 or s.median_ms <= 0:
            continue
        if s.median_ms > 1.5 * s.min_ms or s.std_ms > 0.5 * s.median_ms:
            lines.append(
                f"{label} rounds spread from {_ms(s.min_ms)} to {_ms(s.max_ms)} ms (median "
                f"{_ms(s.median_ms)} ms, std {_ms(s.std_ms)} ms): the machine was busy, so "
                "these times are not the model's; rerun on an idle machine or with more "
                "--rounds"
            )
    return lines


def _count(value: object) -> str:
    return f"{value:,}" if isinstance(value, int) else "n/a"


def _ms(value: float) -> str:
    return f"{value:.3f}" if value < 100 else f"{value:.1f}"


def render_bench(run: BenchRun, *, top: int = 10, width: int = 100) -> str:
    """The bench document as a short report, with the slowest modules, in ``width`` columns."""
    from pytest_modelprof.runtime.module_timing import format_module_times

    doc = run.report
    shapes = ", ".join("x".join(str(s) for s in shape) for shape in run.input_shapes)
    rounds = doc.runtime.forward.rounds
    lines = [
        f"bench {run.model} on {run.device} ({run.dtype}), input {shapes}, "
        f"optimizer {run.optimizer}, {rounds} rounds",
        "",
    ]
    stats = [
        [label, _ms(s.median_ms), _ms(s.mean_ms), _ms(s.std_ms), _ms(s.min_ms), _ms(s.max_ms)]
        for label, s in (("forward", doc.runtime.forward), ("backward", doc.runtime.backward),
                         ("training step", doc.runtime.training_step))
    ]
    columns = [Column("ms"), *(Column(h, ">") for h in ("median", "mean", "std", "min", "max"))]
    lines += layout_table(columns, stats, width, indent="  ").lines
    b = doc.memory.breakdown
    lines += [
        "",
        f"memory: peak {format_bytes(doc.memory.peak_bytes)} in a training step",
        f"  parameters {format_bytes(b.parameters)}, gradients {format_bytes(b.gradients)}, "
        f"optimizer state {format_bytes(b.optimizer_state)}, "
        f"activations {format_bytes(b.activations)}",
    ]
    total = doc.flops.total or 1
    families = sorted(doc.flops.breakdown.items(), key=lambda kv: (-kv[1], kv[0]))
    lines.append(f"FLOPs: {format_count(doc.flops.total, 'FLOPs')} per forward")
    lines.append("  " + ", ".join(f"{k} {100 * v / total:.1f} %" for k, v in families))
    lines += [part for w in busy_warnings(doc) for part in fit_line(f"warning: {w}", width)]
    if doc.predicted is not None:
        lines += fit_line(
            f"forward predicted on {doc.predicted['machine']} ({doc.predicted['precision']}): "
            f"{doc.predicted['forward_ms']:.3g} ms, {doc.predicted['samples_per_s']:,.0f} "
            "samples/s (exact counts priced by the calibrated GPU-time model)",
            width,
        )
    if doc.against is not None:
        lines += fit_line(f"forward against {doc.against['ref']}: {doc.against['reason']}", width)
    if doc.instructions is not None:
        c = doc.instructions
        lines.append(
            f"instructions per call (callgrind, {c.get('calls')} calls, "
            f"{c.get('capability') or 'cpu'} kernels): forward {_count(c.get('forward'))}, "
            f"backward {_count(c.get('backward'))}, "
            f"training step {_count(c.get('training_step'))}"
        )
    hw = doc.hardware
    gpu = (f"{hw.gpu_name} ({format_bytes(hw.gpu_memory_bytes or 0)})" if hw.gpu_name
           else "no GPU")
    lines.append(f"hardware: {hw.cpu}, {hw.cores} cores, {gpu}, torch {hw.torch}")
    if run.modules is not None and top:
        lines += ["", f"slowest modules by own forward time ({run.modules.rounds} rounds, "
                      "hooks included; total = with children):"]
        lines.append(format_module_times(run.modules, top=top, width=width).rstrip("\n"))
    return "\n".join(lines) + "\n"


COMMAND = Command(
    name="bench",
    summary="time forward, backward and a training step; peak memory, FLOPs, hardware",
    description=(
        "Build MODEL with random weights on --device and measure it on real tensors: the\n"
        "forward pass, the backward pass and a whole training step (warm-up rounds, then\n"
        "timed rounds; CUDA events on a GPU; eval mode for the forward, train mode with\n"
        "dropout off for the others, a fixed seed), the peak memory of a training step split\n"
        "into parameters, gradients, optimizer state and activations (allocation tracker on\n"
        "the CPU, caching allocator on a GPU), the counted FLOPs by op family, and the\n"
        "hardware. Then it lists the modules that take the most forward time.\n"
        "--instructions adds the CPU instructions per call of each phase, counted by\n"
        "valgrind's callgrind (apt-get install valgrind): a figure that does not move with\n"
        "load, for the CPU type it ran on.\n\n"
        + HOOK_OVERHEAD + "\nThe forward, backward and training-step figures are measured "
        "without hooks."
    ),
    examples="""\
  modelprof bench resnet18 --input-shape 1,3,64,64 --rounds 5
  modelprof bench resnet50 --batch 8 --optimizer adamw --top 15
  modelprof bench resnet18 --input-shape 1,3,64,64 --rounds 5 --machine h100
  modelprof bench resnet18 --input-shape 1,3,64,64 --rounds 5 --json > bench.json
  modelprof bench resnet18 --input-shape 2,3,32,32 --rounds 5 --instructions --json
  modelprof bench vit_b_16 --device cuda --dtype bfloat16 --rounds 50 --warmup 10
  modelprof bench my_pkg.nets:make_net --input-shape 1,3,32,32 --rounds 5 --against v1.0""",
    add_arguments=_add_bench_arguments,
    run=_run_bench,
)
