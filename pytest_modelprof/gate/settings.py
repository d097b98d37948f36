"""The run-wide gate settings from the command line and the ini file, resolved once.

:func:`resolve_session` turns the CLI and ini values into a frozen :class:`SessionSettings` at
configure time (CLI over ini over built-in); a test's marker is layered on top by
:func:`~pytest_modelprof.gate.marker.resolve_marker`. Every error is a
:class:`~pytest_modelprof.errors.SettingsError` that names where the bad value came from
(``--modelprof-limit``, ``ini modelprof_limits``).

Standard library only (plus the light tolerance and metric tables): the plugin calls this at
start-up in every run, so it must not import pydantic or torch.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from pytest_modelprof.errors import SettingsError
from pytest_modelprof.gate.limits import Limits, _why, parse_limit_items
from pytest_modelprof.gate.setting_values import parse_bool

__all__ = [
    "INSTRUCTIONS_MODES",
    "SessionSettings",
    "cli_flag",
    "ini_key",
    "resolve_session",
]

#: The settings with a run-wide ``--modelprof-<name>`` flag and ``modelprof_<name>`` ini key
#: (``fvcore`` has the flag only): the base every marker is resolved over.
SESSION_SETTINGS: Final = ("fail_on_improvement", "fail_on_uncounted", "timing_verdicts")


def cli_flag(key: str) -> str:
    """``fail_on_improvement`` -> ``--modelprof-fail-on-improvement``."""
    return "--modelprof-" + key.replace("_", "-")


def ini_key(key: str) -> str:
    """``fail_on_improvement`` -> ``modelprof_fail_on_improvement``."""
    return "modelprof_" + key


@dataclass(frozen=True)
class SessionSettings:
    """The run-wide settings, from the CLI and the ini file."""

    baseline_dir: Path
    update: bool = False
    # An improvement beyond tolerance fails (a marker's fail_on_improvement overrides it).
    fail_on_improvement: bool = False
    prune: bool = False
    limits: Limits = Limits()
    # Kernel-dependent counts fail even when the baseline comes from another environment.
    fail_on_environment: bool = False
    # Run the test bodies without profiling, gating or touching baselines.
    disable: bool = False
    # Without valgrind, a test with an instructions limit errors ("error") or is skipped.
    instructions: str = "error"

    def header(self) -> str:
        """The line the plugin prints in the session header."""
        if self.disable:
            return "modelprof: disabled (--modelprof-disable): tests run without profiling"
        mode = "update" if self.update else (
            "fail on improvement" if self.fail_on_improvement else "check"
        )
        return f"modelprof: baselines in {self.baseline_dir} ({mode})"


def _given(value: object) -> bool:
    return value is not None and value != ""


def resolve_session(
    cli: Mapping[str, object],
    ini: Mapping[str, object],
    *,
    rootdir: Path,
    invocation_dir: Path,
    ini_dir: Path | None = None,
) -> SessionSettings:
    """CLI over ini over built-in defaults. Keys are setting names (``baseline_dir``,
    ``fail_on_improvement``, ...; ``None`` or ``""`` means not given) and ``limit``, the
    ``NAME=VALUE`` items of ``--modelprof-limit`` and of the ``modelprof_limits`` ini list."""
    limits = _session_limits(cli, ini)
    if _given(cli.get("baseline_dir")):
        baseline_dir = invocation_dir / str(cli["baseline_dir"])
    elif _given(ini.get("baseline_dir")):
        baseline_dir = (ini_dir or rootdir) / str(ini["baseline_dir"])
    else:
        baseline_dir = rootdir / "baselines"

    def flag(key: str) -> bool:
        for source, values in ((cli_flag(key), cli), (f"ini {ini_key(key)}", ini)):
            if _given(values.get(key)):
                try:
                    return parse_bool(values[key])
                except ValueError as exc:
                    raise SettingsError(f"{source}: {_why(exc)}") from None
        return False

    return SessionSettings(
        baseline_dir=Path(baseline_dir).resolve(),
        update=flag("update_baselines"),
        fail_on_improvement=flag("fail_on_improvement"),
        prune=flag("prune_baselines"),
        limits=limits,
        fail_on_environment=flag("fail_on_environment"),
        disable=flag("disable"),
        instructions=instructions_mode(cli, ini),
    )


def _session_limits(cli: Mapping[str, object], ini: Mapping[str, object]) -> Limits:
    """The limits and session settings of the ini file, then the command line's over them."""
    limits = Limits()
    for values, from_ini in ((ini, True), (cli, False)):
        source = f"ini {ini_key('limits')}" if from_ini else "--modelprof-limit"
        for item in _items(values.get("limit")):
            # One item at a time: an error is about the ini line or the flag value at fault.
            limits = limits.with_values(parse_limit_items([item], source), source)
        for key in (*SESSION_SETTINGS, "fvcore"):
            if _given(values.get(key)):
                where = f"ini {ini_key(key)}" if from_ini else cli_flag(key)
                limits = limits.with_values({key: values[key]}, where)
    return limits


def _items(raw: object) -> list[str]:
    """The ``NAME=VALUE`` items of a repeated flag or an ini line list."""
    if raw is None or raw == "":
        return []
    if isinstance(raw, str):
        return [line for line in raw.splitlines() if line.strip()]
    return [str(item) for item in raw if str(item).strip()]  # type: ignore[attr-defined]


#: ``error`` (the default): the test fails naming the install; ``skip``: it is skipped.
INSTRUCTIONS_MODES: Final = ("error", "skip")


def instructions_mode(cli: Mapping[str, object], ini: Mapping[str, object]) -> str:
    """The mode from the command line, else the ini file, else ``error``."""
    for source, values in (("--modelprof-instructions", cli), ("ini modelprof_instructions", ini)):
        raw = values.get("instructions")
        if raw is None or raw == "":
            continue
        mode = str(raw).strip().lower()
        if mode not in INSTRUCTIONS_MODES:
            raise SettingsError(
                f"{source}: bad value {raw!r}; use {' or '.join(INSTRUCTIONS_MODES)}"
            )
        return mode
    return "error"
