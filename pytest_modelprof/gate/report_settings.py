"""Report settings resolved from the options: which files a run writes, and the GitHub job
summary switch (:class:`~pytest_modelprof.results.outputs.ReportSettings`).

Each is a ``--modelprof-<key>`` flag with a ``modelprof_<key>`` ini twin; CLI over ini. Standard
library only: the plugin resolves these at start-up.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Final

from pytest_modelprof.errors import SettingsError
from pytest_modelprof.gate.limits import _why
from pytest_modelprof.gate.settings import _given, cli_flag, ini_key
from pytest_modelprof.results.outputs import ReportSettings

__all__ = [
    "REPORT_KEYS",
    "GITHUB_MODES",
    "check_report_path",
    "resolve_reports",
]


#: The report settings: each is a ``--modelprof-<key>`` flag with a ``modelprof_<key>`` ini twin.
REPORT_KEYS: Final = ("report", "json", "markdown", "github", "artifact_url")
GITHUB_MODES: Final = ("auto", "off")
_REPORT_SUFFIXES: Final = {
    "report": (".html", ".htm"),
    "json": (".json",),
    "markdown": (".md", ".markdown"),
}


def check_report_path(key: str, value: str) -> str:
    """``type=`` of the path options: the suffix says the format (``ValueError`` otherwise)."""
    suffixes = _REPORT_SUFFIXES[key]
    if not value.strip():
        raise SettingsError(f"expected a file path ending in {' or '.join(suffixes)}")
    if not value.lower().endswith(suffixes):
        raise SettingsError(f"{value!r} should end in {' or '.join(suffixes)}")
    return value


def resolve_reports(
    cli: Mapping[str, object],
    ini: Mapping[str, object],
    *,
    invocation_dir: Path,
    ini_dir: Path,
) -> ReportSettings:
    """CLI over ini for the report options; CLI paths are relative to the invocation directory,
    ini paths to the ini file."""
    paths: dict[str, Path | None] = {}
    for key in ("report", "json", "markdown"):
        if _given(cli.get(key)):
            raw, base, source = str(cli[key]), invocation_dir, cli_flag(key)
        elif _given(ini.get(key)):
            raw, base, source = str(ini[key]), ini_dir, f"ini {ini_key(key)}"
        else:
            paths[key] = None
            continue
        try:
            check_report_path(key, raw)
        except ValueError as exc:
            raise SettingsError(f"{source}: {_why(exc)}") from None
        paths[key] = (base / raw).resolve()
    github = "auto"
    for source, values in ((cli_flag("github"), cli), (f"ini {ini_key('github')}", ini)):
        if _given(values.get("github")):
            github = str(values["github"]).strip().lower()
            if github not in GITHUB_MODES:
                raise SettingsError(
                    f"{source}: expected one of {', '.join(GITHUB_MODES)}, got {github!r}"
                )
            break
    artifact = cli.get("artifact_url") if _given(cli.get("artifact_url")) else ini.get(
        "artifact_url"
    )
    return ReportSettings(
        html=paths["report"],
        json=paths["json"],
        markdown=paths["markdown"],
        github=github != "off",
        artifact_url=str(artifact) if _given(artifact) else None,
    )
