"""The plugin's command-line options and ini keys (pytest wiring, kept apart from the hooks)."""

from __future__ import annotations

import argparse
from typing import Any

import pytest

from pytest_modelprof.gate.report_settings import GITHUB_MODES, check_report_path
from pytest_modelprof.gate.settings import BOOL_KEYS, LIMIT_NAMES, cli_flag, ini_key
from pytest_modelprof.instructions.mode import INSTRUCTIONS_MODES

__all__ = ["add_options"]


def add_options(parser: pytest.Parser) -> None:
    """Every ``--modelprof-*`` option in one group, each limit and report with its ini twin."""
    group = parser.getgroup("modelprof", "model cost regression gate (pytest-modelprof)")
    group.addoption(
        "--modelprof-update-baselines",
        action="store_true",
        default=None,
        dest="modelprof_update",
        help="write or overwrite the baselines of the selected tests (a normal run never writes)",
    )
    group.addoption(
        "--modelprof-baseline-dir",
        default=None,
        dest="modelprof_baseline_dir",
        metavar="DIR",
        help="where baselines live (default: baselines/ at the rootdir); "
        "ini: modelprof_baseline_dir",
    )
    group.addoption(
        "--modelprof-strict",
        action="store_true",
        default=None,
        dest="modelprof_strict",
        help="an improvement beyond tolerance also fails, so baselines stay tight; "
        "ini: modelprof_strict",
    )
    group.addoption(
        "--modelprof-env-strict",
        action="store_true",
        default=None,
        dest="modelprof_env_strict",
        help="kernel-dependent counts (traffic, peak activations, subgraphs, stages) fail even "
        "when the baseline was recorded with another torch, device type or CPU (by default they "
        "warn and name the difference); ini: modelprof_env_strict",
    )
    group.addoption(
        "--modelprof-disable",
        action="store_true",
        default=None,
        dest="modelprof_disable",
        help="run the tests without profiling, gating or touching baselines (the marker stays "
        "registered, so --strict-markers keeps working); ini: modelprof_disable",
    )
    group.addoption(
        "--modelprof-prune-baselines",
        action="store_true",
        default=None,
        dest="modelprof_prune",
        help="delete the baselines that no test uses any more (they are listed at the end of "
        "every run that finds them; only a complete run, with the gate on and nothing "
        "deselected or stopped, can find them); a parameter this run did not generate keeps "
        "its baseline while its test function exists",
    )
    group.addoption(
        "--modelprof-instructions",
        choices=INSTRUCTIONS_MODES,
        default=None,
        dest="modelprof_instructions",
        help="where valgrind is missing, a test with an instructions limit errors (error, the "
        "default) or is skipped (skip); ini: modelprof_instructions",
    )
    group.addoption(
        "--modelprof-timing-base",
        default=None,
        dest="modelprof_timing_base",
        metavar="REF",
        help="time each latency-limited test's model at REF too (built in a temporary worktree, "
        "in a second process) and judge the head against it from paired rounds in this "
        "session; where REF cannot build the model the stored baseline judges. Default: off "
        "(experimental); 'auto' pairs with the merge base of a pull request in GitHub Actions "
        "and is off elsewhere",
    )
    _add_report_options(group, parser)
    parser.addini(
        "modelprof_baseline_dir", "baseline directory, relative to the ini file", "string", ""
    )
    parser.addini("modelprof_strict", "fail on improvements beyond tolerance", "bool", False)
    parser.addini(
        "modelprof_env_strict", "kernel-dependent counts fail across environments", "bool", False
    )
    parser.addini("modelprof_disable", "run tests without profiling or baselines", "bool", False)
    parser.addini(
        "modelprof_instructions",
        "without valgrind, instructions limits: error or skip",
        "string",
        "",
    )
    switches = {
        "fvcore": "cross-check FLOPs against fvcore for every profiled model",
        "timing_strict": "every timing limit fails, also compile time and latency growth (by "
        "default a decisive latency regression fails and the rest warn; timing_strict=False "
        "in the marker: all warn)",
        "strict_ops": "any op without a cost formula fails the test (a new one always does)",
    }
    for key in LIMIT_NAMES:
        if key in BOOL_KEYS:
            group.addoption(
                cli_flag(key),
                action="store_true",
                default=None,
                dest=ini_key(key),
                help=f"{switches[key]}; ini: {ini_key(key)}",
            )
            parser.addini(ini_key(key), switches[key], "bool", False)
            continue
        grammar = (
            " (0.1 or 10%%, exact, ignore; 1 or more only as a percentage such as 150%%)"
            if (key.endswith(("_delta", "_drop")))
            else ""
        )
        group.addoption(
            cli_flag(key),
            default=None,
            dest=ini_key(key),
            metavar="LIMIT",
            help=f"default {key} for every profiled test{grammar} (the marker overrides it); "
            f"ini: {ini_key(key)}",
        )
        parser.addini(ini_key(key), f"default {key} for every profiled test", "string", "")


def _report_path(key: str) -> Any:
    def check(value: str) -> str:
        try:
            return check_report_path(key, value)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    return check


def _add_report_options(group: Any, parser: pytest.Parser) -> None:
    reports = {
        "report": ("PATH.html", "write the HTML diff report (self-contained, one file)"),
        "json": ("PATH.json", "write every profile, comparison and verdict as JSON"),
        "markdown": ("PATH.md", "write the diff report as Markdown"),
    }
    for key, (metavar, text) in reports.items():
        group.addoption(
            cli_flag(key),
            default=None,
            dest=ini_key(key),
            metavar=metavar,
            type=_report_path(key),
            help=f"{text}; ini: {ini_key(key)}",
        )
        parser.addini(ini_key(key), f"{text} (relative to the ini file)", "string", "")
    group.addoption(
        cli_flag("github"),
        default=None,
        dest=ini_key("github"),
        choices=GITHUB_MODES,
        help="auto (default): on GitHub Actions, append a table to $GITHUB_STEP_SUMMARY and "
        "annotate each failing test; off: neither; ini: modelprof_github",
    )
    parser.addini(
        ini_key("github"), "GitHub job summary and annotations: auto or off", "string", ""
    )
    group.addoption(
        cli_flag("artifact_url"),
        default=None,
        dest=ini_key("artifact_url"),
        metavar="URL",
        help="where the HTML report can be downloaded, linked from the job summary (default on "
        "GitHub Actions: the run's artifacts; env MODELPROF_ARTIFACT_URL); "
        "ini: modelprof_artifact_url",
    )
    parser.addini(
        ini_key("artifact_url"), "link to the HTML report from the job summary", "string", ""
    )
