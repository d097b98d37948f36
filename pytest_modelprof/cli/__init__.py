"""The ``modelprof`` command line: a thin entry over one module per subcommand.

Each subcommand module holds a :class:`~pytest_modelprof.cli._common.Command` named
``COMMAND``: its name, a one-line summary, its examples, a function that adds its options and
one that runs it. Adding a subcommand means writing that module and adding it to
:data:`COMMANDS`. Errors this package raises on purpose (:class:`ModelprofError`) end as one
``modelprof: error: ...`` line on stderr with exit code 2; argparse reports bad option values
the same way. Heavy imports (torch) happen inside the commands, so ``--help`` and
``--version`` stay fast.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from pytest_modelprof._version import __version__
from pytest_modelprof.cli import (
    bench,
    comment,
    compare,
    fvcore,
    graph,
    history,
    listing,
    llm,
    memory,
    merge,
    partition,
    profile,
    report,
)
from pytest_modelprof.cli import bisect as bisect_command
from pytest_modelprof.cli import compile as compile_command
from pytest_modelprof.cli import sweep as sweep_command
from pytest_modelprof.cli._common import EXIT_OK, EXIT_USAGE, PROG, Command, suggest
from pytest_modelprof.errors import ModelNotFoundError, ModelprofError, did_you_mean

__all__ = ["COMMANDS", "Command", "build_parser", "main"]

#: Every subcommand, in the order ``--help`` lists them.
COMMANDS: tuple[Command, ...] = (
    profile.COMMAND,
    bench.COMMAND,
    memory.COMMAND,
    listing.COMMAND,
    fvcore.COMMAND,
    sweep_command.COMMAND,
    partition.COMMAND,
    graph.COMMAND,
    compile_command.COMMAND,
    llm.COMMAND,
    compare.COMMAND,
    merge.COMMAND,
    report.COMMAND,
    comment.COMMAND,
    history.COMMAND,
    bisect_command.COMMAND,
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


def _unknown_command(words: Sequence[str]) -> str | None:
    """One line for a first word that is no command (argparse would list every choice)."""
    if not words or words[0].startswith("-"):
        return None
    names = [c.name for c in COMMANDS]
    if words[0] in names:
        return None
    hint = did_you_mean(words[0], names, n=1) or f"; the commands are {', '.join(names)}"
    return f"unknown command {words[0]!r}{hint} (see '{PROG} --help')"


def _unknown_options(
    parser: argparse.ArgumentParser, args: argparse.Namespace, extra: list[str]
) -> None:
    """Exit 2 naming the words the command does not take, with "did you mean" for a mistyped
    flag and the command's own usage (argparse would print the top level's)."""
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    command = sub.choices.get(getattr(args, "command", None) or "")
    if command is None:
        parser.error(f"unrecognized arguments: {' '.join(extra)}")
    flags = [f for a in command._actions for f in a.option_strings if f.startswith("--")]
    flag = next((w for w in extra if w.startswith("-")), None)
    if flag is None:
        command.error(f"unrecognized arguments: {' '.join(extra)}")
        return
    word = flag.split("=", 1)[0]
    command.error(f"unknown option {word!r}{did_you_mean(word, flags)} (see '{command.prog} "
                  "--help')")


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``modelprof`` with ``argv`` (default ``sys.argv[1:]``); returns the exit code."""
    parser = build_parser()
    words = list(sys.argv[1:] if argv is None else argv)
    unknown = _unknown_command(words)
    if unknown is not None:
        parser.print_usage(sys.stderr)
        print(f"{PROG}: error: {unknown}", file=sys.stderr)
        return EXIT_USAGE
    try:
        args, extra = parser.parse_known_args(words)
        if extra:
            _unknown_options(parser, args, extra)
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
            message += suggest(getattr(args, "model", "") or "")
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
