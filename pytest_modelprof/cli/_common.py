"""What every ``modelprof`` command shares: the command record, option types and output."""

from __future__ import annotations

import argparse
import ast
import re
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pytest_modelprof.baseline.tolerance import Ignore, Relative
from pytest_modelprof.baseline.tolerance import parse_tolerance as parse_limit
from pytest_modelprof.errors import SettingsError, close_matches, suggestion
from pytest_modelprof.models import list_models, resolve
from pytest_modelprof.report.session import write_outputs
from pytest_modelprof.textfit import fit_text, terminal_width
from pytest_modelprof.units import parse_bytes

if TYPE_CHECKING:
    from pytest_modelprof.machines import Machine

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



def parse_machine(text: str) -> str:
    """A name of the machine table (``h100``) or a balance in FLOPs per byte (``10``), checked
    here so a typo is a usage error with "did you mean"; resolved by :func:`machine_of`."""
    from pytest_modelprof.machines import resolve_machine

    try:
        resolve_machine(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return text


def machine_of(args: argparse.Namespace, default: str = "amp") -> Machine | None:
    """The roofline of ``--machine`` at ``--precision`` (``None`` without ``--machine``)."""
    from pytest_modelprof.machines import resolve_machine

    if args.machine is None:
        return None
    return resolve_machine(args.machine, getattr(args, "precision", None) or default)


def parse_capacity(text: str) -> int:
    """A memory size such as ``24GB``, ``22GiB`` or ``25769803776``, in bytes."""
    try:
        value = int(parse_bytes(text))
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"{exc}; write e.g. 80GB") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive size such as 80GB, got {text!r}")
    return value



def parse_device(text: str) -> str:
    """A torch device string: ``cpu``, ``cuda``, ``cuda:1``, ``meta``."""
    if re.fullmatch(r"(cpu|meta|cuda)(:\d+)?", text):
        return text  # a default of "cpu" must not import torch before a bad name is reported
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



INPUT_DTYPES = ("int64", "int32", *DTYPES)


def parse_input_dtype(text: str) -> str:
    """An input tensor's dtype: token ids (``int64``, ``long``, ``int32``, ``int``) or a float."""
    name = text.strip().removeprefix("torch.")
    name = {"long": "int64", "int": "int32"}.get(name, name)
    if name in ("int64", "int32"):
        return name
    try:
        return parse_dtype(name)
    except argparse.ArgumentTypeError:
        raise argparse.ArgumentTypeError(
            f"unknown input dtype {text!r}; use one of {', '.join(INPUT_DTYPES)}"
        ) from None


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



# A comma that starts another KEY=VALUE (a value may hold commas itself: a list, a dict).
_NEXT_PAIR = re.compile(r",(?=\s*[A-Za-z_]\w*\s*=)")


def parse_arch_list(text: str) -> list[tuple[str, Any]]:
    """``num_hidden_layers=2,hidden_size=64`` -> ``[("num_hidden_layers", 2), ...]``."""
    return [parse_arch(part) for part in _NEXT_PAIR.split(text)]


def parse_positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number >= 1; got {text!r}")
    return value


def parse_top(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected a number of layers >= 0; got {text!r}")
    return value



def parse_tolerance(text: str) -> float:
    """``0.05`` or ``5%`` -> ``0.05``, in the marker's grammar (``10`` is refused as a likely
    typo for 10 %; ``"1000%"`` says it)."""
    try:
        tolerance = parse_limit(text)
        if isinstance(tolerance, Ignore):
            raise SettingsError("a relative tolerance is needed here, such as 0.05 or 5%")
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"{text!r}: {exc}") from None
    return tolerance.fraction if isinstance(tolerance, Relative) else 0.0



def parse_names(text: str) -> list[str]:
    names = [n.strip() for n in text.split(",") if n.strip()]
    if not names:
        raise argparse.ArgumentTypeError(f"expected comma-separated model names; got {text!r}")
    return names



def out(text: str) -> None:
    """A document for programs (JSON, Markdown) to stdout, as it is."""
    sys.stdout.write(text)


def show(text: str) -> None:
    """Text a person reads to stdout: every line fitted to the terminal's width (tables are
    laid out to it already; a long line of prose wraps under its own indentation)."""
    end = "\n" if text.endswith("\n") else ""
    sys.stdout.write(fit_text(text.removesuffix("\n"), terminal_width()) + end)



def note(text: str) -> None:
    """Progress and side notes go to stderr, so stdout stays a clean report (or JSON)."""
    print(text, file=sys.stderr, flush=True)



def suggest(name: str) -> str:
    """Close model names for an error message (empty when the registry has none)."""
    try:
        known = [n for names in list_models().values() for n in names]
    except Exception:  # the suggestion is a courtesy; never hide the real error behind it
        return ""
    close = close_matches(name, known, n=5)
    close += [n for n in known if name.lower() in n.lower() and n not in close][: 5 - len(close)]
    return suggestion(close)



def resolve_names(names: Sequence[str]) -> None:
    """Resolve every name before any slow work, so a typo fails at once."""
    for name in names:
        resolve(name)



@dataclass(frozen=True)
class Option:
    """An option every command spells and parses alike; a command words its help."""

    flags: tuple[str, ...]
    kwargs: dict[str, Any]

    @property
    def is_flag(self) -> bool:
        return self.kwargs.get("action") == "store_true"


def _option(*flags: str, **kwargs: Any) -> tuple[str, Option]:
    return flags[0], Option(flags, kwargs)


#: The shared options by long flag. ``--json`` prints the command's JSON document to stdout; a
#: file is ``--output``; hardware is ``--machine`` from :data:`pytest_modelprof.machines.MACHINES`
#: with its precision separate (test: tests/unit/test_cli_conventions.py).
OPTIONS: dict[str, Option] = dict([
    _option("--json", action="store_true",
            help="print the JSON document to stdout instead of the text report"),
    _option("--output", "-o", metavar="FILE", help="write the result to FILE"),
    _option("--html", metavar="FILE.html", help="write the HTML report"),
    _option("--markdown", metavar="FILE.md", help="write the report as Markdown"),
    _option("--machine", type=parse_machine, metavar="NAME",
            help="hardware by its name: h100, h200, a100-40gb, a100-80gb, rtx4090, l4, ... (a "
                 "wrong name lists them all)"),
    _option("--precision", metavar="PRECISION", help="the precision of the computation"),
    _option("--capacity", type=parse_capacity, metavar="BYTES",
            help="memory to fit into, e.g. 24GB (default: the --machine's)"),
    _option("--optimizer", metavar="NAME", help="optimizer of the training step"),
    _option("--input-shape", type=parse_shape, metavar="SHAPE",
            help="input tensor shape, e.g. 1,3,224,224 (default: the model's own)"),
    _option("--dtype", type=parse_dtype, metavar="DTYPE",
            help=f"cast weights and inputs to {', '.join(DTYPES)}"),
    _option("--device", type=parse_device, metavar="DEVICE",
            help="where to build and run the model: cpu, cuda, cuda:1"),
    _option("--top", type=parse_top, metavar="N", help="rows to show (0 hides them)"),
    _option("--arch", type=parse_arch_list, action="extend", default=[],
            metavar="KEY=VALUE[,...]",
            help="builder keyword arguments, repeatable or comma-separated "
                 "(e.g. --arch num_hidden_layers=4,hidden_size=256)"),
    _option("--mode", help="tensors to capture on"),
    _option("--rounds", type=parse_positive, metavar="N", help="timed rounds"),
    _option("--verbose", "-v", action="store_true", help="say more"),
])

#: What a command may word its own way: the spelling, type and kind stay the table's.
_WORDING = frozenset({"help", "metavar", "default", "choices", "required", "dest"})


def add_option(p: argparse.ArgumentParser, flag: str, **wording: Any) -> argparse.Action:
    """Add the shared option ``flag`` of :data:`OPTIONS` to ``p``; ``wording`` may set its
    help, metavar, default, choices, required or dest."""
    spec = OPTIONS[flag]
    unknown = set(wording) - _WORDING
    if unknown:
        raise TypeError(f"{flag}: {', '.join(sorted(unknown))} are the table's, not a command's")
    return p.add_argument(*spec.flags, **{**spec.kwargs, **wording})



def add_report_outputs(p: argparse.ArgumentParser) -> None:
    add_option(p, "--html", help="write the HTML diff report")
    add_option(p, "--markdown", help="write the diff report as Markdown")
    add_option(p, "--output", metavar="FILE.json",
               help="write the comparison as a results file (re-render it with 'report')")



def write_reports(results: Any, args: argparse.Namespace) -> None:
    from pathlib import Path

    def path(value: str | None) -> Path | None:
        return Path(value) if value else None

    for written in write_outputs(results, html=path(args.html), json=path(args.output),
                                 markdown=path(args.markdown)):
        note(f"wrote {written}")



def add_capture_arguments(p: argparse.ArgumentParser) -> None:
    """The options that say what to capture: shared by ``partition`` and ``graph``."""
    p.add_argument("model", metavar="MODEL", help="a model name (see 'modelprof list')")
    add_option(p, "--input-shape", metavar="SHAPE",
               help="input tensor shape, e.g. 1,3,224,224 (default: the model's own)")
    add_option(p, "--dtype", metavar="DTYPE",
               help=f"cast weights and inputs to {', '.join(DTYPES)}")
    add_option(p, "--mode", choices=("auto", "meta", "fake", "real"), default="auto",
               help="tensors to capture on (default: auto, meta with a real-tensor fallback)")
    add_option(p, "--arch",
               help="builder keyword arguments, repeatable or comma-separated (e.g. --arch "
                    "image_size=518)")



def capture_of(args: argparse.Namespace, machine: Machine | None = None) -> tuple[str, Any]:
    from pytest_modelprof.profile import profile_with_capture

    made = profile_with_capture(args.model, input_shape=args.input_shape, dtype=args.dtype,
                                mode=args.mode, machine=machine, **dict(args.arch))
    return made.profile.model, made.capture
