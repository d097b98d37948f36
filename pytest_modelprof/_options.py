"""The plugin's command-line options and ini keys (pytest wiring, kept apart from the hooks).

One table, :data:`OPTIONS`: each row is a ``--modelprof-<key>`` flag whose value lands in
``config.option.modelprof_<key>``, and, where a CI configuration needs it, a ``modelprof_<ini>``
ini key. Limits are not options one by one: ``--modelprof-limit NAME=VALUE`` (repeatable) and
the ``modelprof_limits`` line list take any of them, in the marker's grammar.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Literal

import pytest

from pytest_modelprof.gate.report_settings import GITHUB_MODES, check_report_path
from pytest_modelprof.gate.setting_values import TIMING_VERDICTS
from pytest_modelprof.gate.settings import INSTRUCTIONS_MODES, cli_flag, ini_key

__all__ = ["add_options", "option_values"]


@dataclass(frozen=True)
class Option:
    """One ``--modelprof-<key>`` flag; ``ini`` names its ``modelprof_<ini>`` twin (``None``:
    none), ``ini_type`` pytest's type for it and ``ini_help`` its text where the flag's does not
    fit; ``argparse`` holds the flag's own keywords."""

    key: str
    help: str
    ini: str | None = None
    ini_type: Literal["string", "bool", "linelist"] = "string"
    argparse: Mapping[str, Any] = field(default_factory=dict)
    ini_help: str | None = None

    @property
    def flag(self) -> str:
        """``--modelprof-<key>`` (``_`` written ``-``)."""
        return cli_flag(self.key)

    @property
    def dest(self) -> str:
        """Where argparse stores the value: ``modelprof_<key>``."""
        return ini_key(self.key)


def _report_path(key: str) -> Any:
    def check(value: str) -> str:
        try:
            return check_report_path(key, value)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    return check


_SWITCH: Final = {"action": "store_true"}

#: Every option of the plugin, in the order ``pytest --help`` lists them.
OPTIONS: Final[tuple[Option, ...]] = (
    Option(
        "update_baselines",
        "write or overwrite the selected tests' baselines",
        None,
        argparse=_SWITCH,
    ),
    Option(
        "baseline_dir",
        "where baselines live (default: baselines/ at the rootdir)",
        "baseline_dir",
        argparse={"metavar": "DIR"},
    ),
    Option(
        "limit",
        "a limit for every profiled test, repeatable (a marker's wins): "
        "max_flops_delta=5%%, max_params=30M",
        "limits",
        "linelist",
        argparse={"action": "append", "metavar": "NAME=VALUE"},
        ini_help="limits for every profiled test, one NAME=VALUE per line (the CLI's win)",
    ),
    Option(
        "fail_on_improvement",
        "an improvement beyond tolerance fails too",
        "fail_on_improvement",
        "bool",
        argparse=_SWITCH,
    ),
    Option(
        "fail_on_environment",
        "kernel-dependent counts fail even against a baseline "
        "from another torch, device type or CPU (default: warn)",
        "fail_on_environment",
        "bool",
        argparse=_SWITCH,
    ),
    Option(
        "fail_on_uncounted",
        "any op without a cost formula fails (a new one always does)",
        "fail_on_uncounted",
        "bool",
        argparse=_SWITCH,
    ),
    Option(
        "timing_verdicts",
        "timing limits all fail or all warn (default: a decisive "
        "latency regression fails, the rest warn)",
        "timing_verdicts",
        argparse={"choices": TIMING_VERDICTS},
    ),
    Option("fvcore", "cross-check FLOPs against fvcore for every profiled model", argparse=_SWITCH),
    Option(
        "disable",
        "run the tests without profiling, gating or touching baselines",
        "disable",
        "bool",
        argparse=_SWITCH,
    ),
    Option(
        "prune_baselines",
        "delete the baselines no test uses (only after a complete run)",
        argparse=_SWITCH,
    ),
    Option(
        "instructions",
        "without valgrind, a test with an instructions limit errors (default) or is skipped",
        "instructions",
        argparse={"choices": INSTRUCTIONS_MODES},
    ),
    Option(
        "timing_base",
        "time latency-limited models at git REF too and judge the head against it, paired "
        "(default 'auto': a pull request's merge base on GitHub Actions, off elsewhere; 'off')",
        argparse={"metavar": "REF"},
    ),
    Option(
        "report",
        "write the HTML report",
        "report",
        argparse={"metavar": "PATH.html", "type": _report_path("report")},
    ),
    Option(
        "json",
        "write every profile, comparison and verdict as JSON",
        "json",
        argparse={"metavar": "PATH.json", "type": _report_path("json")},
    ),
    Option(
        "markdown",
        "write the report as Markdown",
        "markdown",
        argparse={"metavar": "PATH.md", "type": _report_path("markdown")},
    ),
    Option(
        "github",
        "on GitHub Actions: job summary and annotations (auto, the default) or not (off)",
        "github",
        argparse={"choices": GITHUB_MODES},
    ),
    Option(
        "artifact_url",
        "link the job summary to the HTML report here (default on GitHub "
        "Actions: the run's artifacts)",
        "artifact_url",
        argparse={"metavar": "URL"},
    ),
)


def add_options(parser: pytest.Parser) -> None:
    """Every ``--modelprof-*`` option in one group, and the ini keys a CI configuration needs."""
    group = parser.getgroup("modelprof", "model cost regression gate (pytest-modelprof)")
    for option in OPTIONS:
        group.addoption(
            option.flag, dest=option.dest, default=None, help=option.help, **option.argparse
        )
        if option.ini is not None:
            default: object = (
                False
                if option.ini_type == "bool"
                else ([] if option.ini_type == "linelist" else "")
            )
            text = option.ini_help or option.help.replace("%%", "%")
            parser.addini(ini_key(option.ini), text, option.ini_type, default)


def option_values(config: pytest.Config) -> tuple[dict[str, object], dict[str, object]]:
    """The command line's and the ini file's values by option key (``None``: not given)."""
    cli: dict[str, object] = {o.key: getattr(config.option, o.dest) for o in OPTIONS}
    ini: dict[str, object] = {
        o.key: config.getini(ini_key(o.ini)) or None for o in OPTIONS if o.ini is not None
    }
    return cli, ini
