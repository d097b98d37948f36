"""``modelprof profile``: one model's summary, op families, bottlenecks and top layers."""

from __future__ import annotations

import argparse
from typing import Any

from pytest_modelprof.cli._common import (
    DTYPES,
    EXIT_OK,
    Command,
    add_option,
    machine_of,
    note,
    out,
    parse_input_dtype,
    parse_top,
    resolve_names,
    show,
)
from pytest_modelprof.errors import ModelprofError, SettingsError
from pytest_modelprof.models import TOKEN_KINDS, resolve
from pytest_modelprof.textfit import terminal_width

__all__ = ["COMMAND"]

# The precisions of pytest_modelprof.machines.PRECISIONS, spelled out so --help needs no import.
PRECISION_CHOICES = ("fp32", "tf32", "amp", "amp-bf16", "fp16", "bf16")


def _add_profile_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("model", metavar="MODEL", help="a model name (see 'modelprof list')")
    add_option(p, "--input-shape", metavar="SHAPE",
               help="input tensor shape, e.g. 1,3,224,224 (default: the model's own)")
    p.add_argument("--seq-len", type=parse_top, metavar="N",
                   help="tokens per sequence of a model whose first input is token ids "
                        "(hf:gpt2 ...: default 128; a model without a default input gets "
                        "1 x N int64 ids)")
    p.add_argument("--input-dtype", type=parse_input_dtype, metavar="DTYPE",
                   help="dtype of the input tensor: int64 (token ids, all 0) or int32, or a float "
                        "dtype; with --input-shape or --seq-len")
    p.add_argument("--seconds", type=float, metavar="N",
                   help="seconds of 16 kHz raw audio (hf:wav2vec2, hf:hubert ...; default 1)")
    add_option(p, "--device", metavar="DEVICE",
               help="device for real-tensor captures (cpu, cuda; with --mode real or when "
                    "auto falls back); meta forces meta tensors")
    add_option(p, "--dtype", metavar="DTYPE",
               help=f"cast weights and inputs to {', '.join(DTYPES)}")
    add_option(p, "--mode", choices=("auto", "meta", "fake", "real"), default="auto",
               help="tensors to capture on (default: auto, meta with a real-tensor fallback)")
    p.add_argument("--backward", action="store_true",
                   help="include the backward pass of a sum-of-outputs loss")
    add_option(p, "--machine", metavar="NAME|BALANCE",
               help="hardware whose FLOPs/byte balance at --precision splits compute- from "
                    "memory-bound, and the GPU time is predicted on: h100, a100-80gb, rtx4090, "
                    "... (a wrong name lists them all), or a balance in FLOPs/byte (default: 10)")
    add_option(p, "--precision", choices=PRECISION_CHOICES,
               help=f"with --machine NAME: {', '.join(PRECISION_CHOICES)} (default amp: fp16 "
                    "autocast)")
    p.add_argument("--batch", type=parse_top, metavar="N",
                   help="batch size: the first dimension of the model's default input")
    p.add_argument("--kernels", choices=("eager", "fused"), default="eager",
                   help="predict the kernels eager PyTorch launches (default) or those of a "
                   "fusing compiler")
    p.add_argument("--fail-on-uncounted", action="store_true",
                   help="fail (exit 2) when an op without a cost formula ran")
    add_option(p, "--arch",
               help="builder keyword arguments, repeatable or comma-separated (e.g. --arch "
                    "image_size=518)")
    p.add_argument("--no-warmup", action="store_true",
                   help="keep the first capture even if that forward initialised lazy state "
                        "(by default such a model, like YOLO, is captured a second time)")
    add_option(p, "--top", default=10, metavar="N",
               help="show the N layers with the most FLOPs (default: 10; 0 hides them)")
    add_option(p, "--verbose",
               help="show every module as a tree with the totals of its subtree")
    p.add_argument("--showshape", action="store_true", help="add each layer's output shape")
    add_option(p, "--output", help="also write the profile to FILE.json (full document) or "
               "FILE.csv (one row per layer)")
    add_option(p, "--json")



def _of_shape(spec: Any) -> str:
    """`` of shape 1x3x224x224`` when the model has a default input shape."""
    shape = spec.default_input_shape
    return f" of shape {'x'.join(map(str, shape))}" if shape else ""



def _inputs(args: argparse.Namespace) -> tuple[Any, Any]:
    """``(input_shape, inputs)`` from --input-shape, --seq-len and --input-dtype."""
    shape = args.input_shape
    dtype = args.input_dtype
    if args.seconds is not None:  # the model's default audio shape, its length set
        shape = _audio_shape(args)
    elif args.seq_len is not None:
        shape, dtype = _token_shape(args, dtype)
    if dtype is None:
        return shape, None
    if shape is None:
        raise ModelprofError("--input-dtype needs --input-shape or --seq-len")
    import torch

    kind = getattr(torch, dtype)
    # Token ids of 0 are valid for any vocabulary; meta and fake captures never read them.
    made = torch.zeros(shape, dtype=kind) if not kind.is_floating_point else torch.randn(
        shape, dtype=kind
    )
    return None, made


def _audio_shape(args: argparse.Namespace) -> Any:
    """The model's default raw-audio shape with ``--seconds`` of samples."""
    if args.input_shape is not None or args.seq_len is not None:
        raise ModelprofError("give one of --seq-len, --seconds or --input-shape")
    # Checked here so the answer names the options, not input_shape_for's arguments.
    if not args.seconds > 0:  # nan too
        raise ModelprofError(f"--seconds must be positive, got {args.seconds:g}")
    spec = resolve(args.model)
    if spec.input_kind != "input_values":
        raise ModelprofError(
            f"{args.model} takes {spec.input_kind} inputs{_of_shape(spec)}, not raw audio: "
            "--seconds applies to raw-audio models (hf:wav2vec2, hf:hubert ...); give "
            + ("--seq-len or " if spec.input_kind in TOKEN_KINDS else "")
            + "--input-shape instead"
        )
    return spec.input_shape_for(seconds=args.seconds)


def _token_shape(args: argparse.Namespace, dtype: str | None) -> tuple[Any, str | None]:
    """``(shape, dtype)`` of ``--seq-len`` tokens for the model."""
    if args.input_shape is not None:
        raise ModelprofError("give --seq-len or --input-shape, not both")
    if args.seq_len <= 0:
        raise ModelprofError(f"--seq-len must be a positive number of tokens, got "
                             f"{args.seq_len}")
    spec = resolve(args.model)
    if spec.input_kind in TOKEN_KINDS:  # the model's own (batch, seq_len), seq_len set
        return spec.input_shape_for(seq_len=args.seq_len), dtype
    if spec.default_input_shape is None:  # a model of yours: one sequence of token ids
        return (1, args.seq_len), dtype or "int64"
    raise ModelprofError(
        f"{args.model} takes {spec.input_kind} inputs of shape "
        f"{'x'.join(map(str, spec.default_input_shape))}, not token ids: --seq-len "
        "applies to models whose first input is token ids; give --input-shape instead"
    )


def _with_batch(args: argparse.Namespace, shape: Any) -> Any:
    """The input shape with ``--batch`` as its first dimension."""
    if shape is None:
        spec = resolve(args.model)
        shape = spec.default_input_shape
        if not shape:
            raise ModelprofError(
                f"--batch: {args.model} has no default input shape; give --input-shape instead"
            )
    return (args.batch, *tuple(shape)[1:])


def _prediction_gpu(args: argparse.Namespace) -> str | None:
    """The GPU to predict on: ``--machine`` when it names one (not a bare balance)."""
    from pytest_modelprof.machines import MACHINES

    name: str | None = args.machine
    if name is not None and name.strip().lower() in MACHINES:
        return name.strip().lower()
    if args.precision is not None:
        raise SettingsError(
            f"--precision {args.precision} is that of a machine's peak and needs --machine "
            f"naming one ({', '.join(MACHINES)}); got {name or 'no --machine'}"
        )
    return None


def _run_profile(args: argparse.Namespace) -> int:
    resolve_names([args.model])  # a misspelled name fails before torch is imported
    from pytest_modelprof.exports.tabular import write_profile
    from pytest_modelprof.profile import profile_with_capture
    from pytest_modelprof.report.terminal import render_profile

    arch = dict(args.arch)
    input_shape, inputs = _inputs(args)
    if args.batch is not None:
        input_shape = _with_batch(args, input_shape)
    gpu = _prediction_gpu(args)
    made = profile_with_capture(
        args.model,
        input_shape=input_shape,
        inputs=inputs,
        device=args.device,
        dtype=args.dtype,
        mode=args.mode,
        include_backward=args.backward,
        fail_on_uncounted=args.fail_on_uncounted,
        machine=machine_of(args),
        # None: capture again only if the first forward initialised lazy state (YOLO).
        warmup=False if args.no_warmup else None,
        **arch,
    )
    profile = made.profile
    predicted = None
    if gpu is not None:
        from pytest_modelprof.predict import predict_profile

        predicted = predict_profile(made, gpu, precision=args.precision or "amp",
                                    mode=args.kernels, top=args.top)
    if args.json:
        if predicted is None:
            out(profile.to_json())
        else:
            from pytest_modelprof.schema import dumps_deterministic

            doc = profile.model_dump(mode="json")
            doc["predicted"] = predicted.to_json()
            out(dumps_deterministic(doc))
    else:
        show(render_profile(profile, top=args.top, verbose=args.verbose,
                             show_shape=args.showshape, capture=made.capture,
                             width=terminal_width()))
        if predicted is not None:
            from pytest_modelprof.report.prediction import render_prediction

            show(render_prediction(predicted, terminal_width()))
    if args.output:
        kind = write_profile(profile, args.output)
        note(f"wrote {args.output} ({kind})")
    return EXIT_OK



COMMAND = Command(
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
  modelprof profile resnet50 --machine a100-80gb --precision bf16 --dtype bfloat16
  modelprof profile hf:dinov2 --arch image_size=518 --json > dino.json
  modelprof profile timm:convnext_tiny                 # any timm.list_models() name
  modelprof profile timm:resnet50 --machine rtx4090 --batch 256 --precision amp
                                                       # predicted GPU time (calibrated)
  modelprof profile hf:llama --arch num_hidden_layers=16 --seq-len 512""",
    add_arguments=_add_profile_arguments,
    run=_run_profile,
)
