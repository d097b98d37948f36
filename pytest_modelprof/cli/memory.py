"""``modelprof memory``: will a training or inference step fit, estimated without allocating."""

from __future__ import annotations

import argparse
import gc
import json
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from pytest_modelprof.cli._common import (
    EXIT_OK,
    PROG,
    Command,
    add_option,
    out,
    parse_positive,
    show,
)
from pytest_modelprof.errors import ModelprofError
from pytest_modelprof.fit.options import (
    OPTIMIZER_IMPLS,
    OPTIMIZERS,
    PRECISIONS,
    SHARDS,
    StepOptions,
    parse_optimizer,
)
from pytest_modelprof.textfit import Column, layout_table, terminal_width
from pytest_modelprof.units import format_bytes, format_count

if TYPE_CHECKING:
    from pytest_modelprof.fit.estimate import MemoryEstimate
    from pytest_modelprof.fit.verdict import Fit

__all__ = ["COMMAND"]


def _add_memory_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("model", metavar="MODEL", help="a model name (see 'modelprof list')")
    p.add_argument(
        "--train",
        action="store_true",
        help="a training step (forward, backward, optimizer update); default: "
        "inference (forward under no_grad, eval mode)",
    )
    add_option(
        p,
        "--optimizer",
        default="adamw",
        metavar="NAME[:IMPL]",
        help=f"one of {', '.join(OPTIMIZERS)} (sgd: torch.optim.SGD's defaults, no momentum); "
        f"':IMPL' picks {', '.join(OPTIMIZER_IMPLS)} (default adamw:foreach, torch's "
        "default on a GPU)",
    )
    add_option(
        p,
        "--precision",
        default="fp32",
        help=f"one of {', '.join(PRECISIONS)} ('-mixed': torch autocast's recipe, fp32 "
        "weights, the forward under autocast; fp16-mixed also runs torch.amp.GradScaler; "
        "bf16-master: DeepSpeed's and Megatron's, bf16 weights and gradients with fp32 master "
        "weights and optimizer state; default fp32)",
    )
    p.add_argument(
        "--checkpointing",
        action="store_true",
        help="turn on the model's own activation checkpointing (transformers' "
        "activation_checkpointing_enable) for the training step",
    )
    p.add_argument(
        "--batch",
        type=parse_positive,
        metavar="N",
        help="batch size per device (default: the model's own)",
    )
    p.add_argument(
        "--seq-len",
        type=parse_positive,
        metavar="N",
        help="sequence length of a text model's token ids",
    )
    add_option(p, "--input-shape")
    p.add_argument(
        "--device-count",
        type=parse_positive,
        default=1,
        metavar="N",
        help="data-parallel devices the model states are sharded over (default 1)",
    )
    p.add_argument(
        "--shard",
        default="none",
        metavar="NAME",
        help=f"one of {', '.join(SHARDS)} (see README 'Will it fit?' for the "
        "formula; default none)",
    )
    add_option(
        p,
        "--machine",
        help="judge the fit on this hardware's memory: h100, a100-40gb, rtx4090, ... (a wrong "
        "name lists them all; default: every machine of the table)",
    )
    add_option(p, "--capacity", help="judge the fit on this memory size instead, e.g. 24GB")
    p.add_argument(
        "--no-largest-batch",
        action="store_true",
        help="skip the search for the largest batch that fits (one estimate only)",
    )
    add_option(
        p,
        "--mode",
        choices=("auto", "fake", "meta"),
        default="auto",
        help="tensors without data to run on (default auto: fake, then meta)",
    )
    add_option(
        p,
        "--arch",
        help="builder keyword arguments, repeatable or comma-separated "
        "(e.g. --arch num_hidden_layers=4,hidden_size=256)",
    )
    add_option(
        p,
        "--json",
        help="print a JSON document; keys: memory.peak_bytes, memory.breakdown.{"
        "parameters,buffers,inputs,gradients,optimizer_state,grad_scaler,activations,"
        "transient,gathered}, memory.peak_at.{op,module,phase}, memory.model_states.{"
        "parameters,gradients,optimizer_state} (held through the step, per device), "
        "memory.model_states_bytes, memory.fits.DEVICE.{fits,capacity_bytes,headroom_bytes,"
        "largest_batch}, settings (settings.recipe: what the precision keeps)",
    )


def _capacities(args: argparse.Namespace) -> list[tuple[str, int]]:
    """(label, bytes) of --machine and --capacity; every machine of the table without them."""
    from pytest_modelprof.machines import MACHINES, machine_spec

    chosen = []
    if args.machine is not None:  # a bare balance is refused here: it has no memory
        spec = machine_spec(args.machine)
        chosen.append((spec.name, spec.memory_bytes))
    if args.capacity is not None:
        chosen.append((format_bytes(args.capacity), args.capacity))
    return chosen or [(name, spec.memory_bytes) for name, spec in MACHINES.items()]


def _run_memory(args: argparse.Namespace) -> int:
    # Importing torch and the model's library makes ~400k objects that live until exit; the
    # cyclic collector's passes over them while they load cost ~0.5 s and free nothing. It is
    # off until the first estimate is done (whose step runs with it paused anyway).
    was = gc.isenabled()
    gc.disable()
    try:
        return _estimate_and_judge(args, gc.enable if was else gc.disable)
    finally:
        if was:
            gc.enable()


def _estimate_and_judge(args: argparse.Namespace, resume: Callable[[], None]) -> int:
    from pytest_modelprof.fit.estimate import estimate_memory
    from pytest_modelprof.fit.verdict import fit_on

    name, impl = parse_optimizer(args.optimizer)
    options = StepOptions(
        train=args.train,
        optimizer=name,
        optimizer_impl=impl or "foreach",
        precision=args.precision,
        device_count=args.device_count,
        shard=args.shard,
        checkpointing=args.checkpointing,
    )
    if options.device_count > 1 and options.shard == "none":
        raise ModelprofError(
            f"--device-count {options.device_count} without --shard: plain data parallelism "
            "keeps a full copy per device, so the estimate is that of one device; pass --shard "
            "zero1, zero2, zero3 or fsdp to divide the model states"
        )
    if options.device_count == 1 and options.shard != "none":
        print(
            f"{PROG} memory: warning: --shard {options.shard} with --device-count 1 divides "
            "nothing: the figure is one unsharded device's; pass --device-count N (the "
            "data-parallel devices) to shard over N",
            file=sys.stderr,
        )
    capacities = _capacities(args)
    arch = dict(args.arch)
    cache: dict[int, MemoryEstimate] = {}

    def at(batch: int | None) -> MemoryEstimate:
        key = batch or 0
        if key not in cache:
            cache[key] = estimate_memory(
                args.model,
                input_shape=args.input_shape,
                batch=batch,
                seq_len=args.seq_len,
                options=options,
                mode=args.mode,
                **arch,
            )
        return cache[key]

    estimate = at(args.batch)
    resume()  # the collector, for the largest-batch search
    searchable = not args.no_largest_batch
    start = estimate.input_shapes[0][0] if estimate.input_shapes else 1
    # The search starts at the batch just estimated: a 70B step is seconds, not run twice.
    cache.setdefault(start, estimate)

    def peak_at(batch: int) -> int:
        return at(batch).peak_bytes

    fits = [
        fit_on(label, capacity, estimate.peak_bytes, peak_at if searchable else None, start)
        for label, capacity in capacities
    ]
    if args.json:
        out(document(estimate, fits))
    else:
        show(render_memory(estimate, fits, terminal_width()))
    return EXIT_OK


def document(estimate: MemoryEstimate, fits: list[Fit]) -> str:
    """The ``--json`` document (the keys ``modelprof bench --json`` uses for what both report)."""
    doc: dict[str, Any] = {
        "model": estimate.model,
        "memory": {
            "peak_bytes": estimate.peak_bytes,
            "breakdown": estimate.breakdown,
            "peak_at": estimate.peak_at.model_dump(),
            "single_device_peak_bytes": estimate.single_device_peak_bytes,
            "model_states": estimate.model_states,
            "model_states_bytes": sum(estimate.model_states.values()),
            "fits": {f.device: f.model_dump(exclude={"device"}) for f in fits},
        },
        "settings": {
            "train": estimate.train,
            "optimizer": f"{estimate.optimizer}:{estimate.optimizer_impl}",
            "precision": estimate.precision,
            "recipe": estimate.recipe,
            "devices": estimate.devices,
            "shard": estimate.shard,
            "input_shapes": estimate.input_shapes,
            "mode": estimate.mode,
        },
        "parameter_count": estimate.parameter_count,
    }
    return json.dumps(doc, indent=2, sort_keys=True) + "\n"


def _in_module(module: str) -> str:
    return "" if module.startswith("(") and module != "(model)" else f" in {module}"


def render_memory(estimate: MemoryEstimate, fits: list[Fit], width: int = 100) -> str:
    """The estimate and the fit per device as a short report, in ``width`` columns."""
    e = estimate
    shapes = ", ".join("x".join(str(s) for s in shape) for shape in e.input_shapes)
    what = f"training step, {e.optimizer}:{e.optimizer_impl}" if e.train else "inference"
    where = f", {e.devices} devices {e.shard}" if e.shard != "none" else ""
    lines = [
        f"memory {e.model}: {what}, {e.precision}, input {shapes}{where} "
        f"({format_count(e.parameter_count, 'params')}, {e.mode} tensors: nothing allocated)",
        f"  peak {format_bytes(e.peak_bytes)}{' per device' if where else ''} at "
        f"{e.peak_at.op}{_in_module(e.peak_at.module)} ({e.peak_at.phase})",
        "  "
        + ", ".join(
            f"{k.replace('_', ' ')} {format_bytes(v)}" for k, v in e.breakdown.items() if v
        ),
    ]
    if where:
        lines.append(f"  one device without sharding: {format_bytes(e.single_device_peak_bytes)}")
    if e.train:
        states = e.model_states
        lines.append(
            f"  model states{' per device' if where else ''} (held through the step): "
            + ", ".join(f"{k.replace('_', ' ')} {format_bytes(v)}" for k, v in states.items())
            + f" = {format_bytes(sum(states.values()))}"
        )
    lines.append(f"  {e.precision}: {e.recipe}")
    columns = [Column("device"), Column("capacity", ">"), Column("fits", ">"),
               Column("headroom", ">"), Column("largest batch", ">")]
    rows = [
        [f.device, format_bytes(f.capacity_bytes), "yes" if f.fits else "no",
         format_bytes(f.headroom_bytes), "-" if f.largest_batch is None else str(f.largest_batch)]
        for f in fits
    ]
    lines += ["", *layout_table(columns, rows, width, indent="  ").lines]
    lines.append(
        "  (capacity: the card's total; the CUDA context and allocator fragmentation "
        "take some of the headroom)"
    )
    return "\n".join(lines) + "\n"


COMMAND = Command(
    name="memory",
    summary="will it fit? peak memory of a training or inference step, without allocating",
    description=(
        "Estimate the peak memory of one inference step (forward under no_grad) or, with\n"
        "--train, one training step (forward, backward, the real torch optimizer's update)\n"
        "on tensors without data (fake CPU tensors; meta where fake cannot run): nothing is\n"
        "allocated, so a 70B model takes seconds. The peak is split into parameters,\n"
        "gradients, optimizer state, activations saved for backward and transient buffers,\n"
        "with the op and module where it happens, and judged against the machine table: fits,\n"
        "headroom and the largest batch that fits (a search over estimates). --device-count with\n"
        "--shard divides the model states as ZeRO/FSDP do (README 'Will it fit?')."
    ),
    examples="""\
  modelprof memory resnet50 --train --batch 64 --machine t4
  modelprof memory hf:gpt2 --train --optimizer adamw:fused --precision bf16-mixed --seq-len 1024
  modelprof memory hf:llama --arch num_hidden_layers=80,hidden_size=8192 \\
      --arch intermediate_size=28672,num_attention_heads=64,num_key_value_heads=8 \\
      --train --precision bf16-mixed --optimizer adamw --seq-len 4096 --device-count 8 --shard zero3
  modelprof memory resnet18 --capacity 8GB --json""",
    add_arguments=_add_memory_arguments,
    run=_run_memory,
)
