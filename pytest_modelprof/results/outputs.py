"""Where a run's results go: the report files and the GitHub job summary switch.

The gate resolves it from the options (:mod:`pytest_modelprof.gate.report_settings`); the
session's reports (:mod:`pytest_modelprof.report.session`) write what it names. Standard library
only.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from pytest_modelprof.ci import on_github_actions

__all__ = ["ReportSettings"]


@dataclass(frozen=True)
class ReportSettings:
    """Which reports a run writes; paths are absolute."""

    html: Path | None = None
    json: Path | None = None
    markdown: Path | None = None
    github: bool = True  # job summary and annotations when GitHub's variables are set
    artifact_url: str | None = None

    @property
    def any_file(self) -> bool:
        """Whether any report file was asked for."""
        return any(p is not None for p in (self.html, self.json, self.markdown))

    def active(self, env: Mapping[str, str]) -> bool:
        """Whether the run has anything to collect for the reports."""
        on_github = self.github and (bool(env.get("GITHUB_STEP_SUMMARY")) or on_github_actions(env))
        return self.any_file or on_github
