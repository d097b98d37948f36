"""The reports of one pytest run, built on the controller from the gate's records.

:class:`SessionReports` is fed by the plugin (records through ``pytest_modelprof_record``,
test locations from the call reports) and at the end of the session writes the requested
files, the GitHub job summary and the annotations. No pytest import: the plugin only wires it.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING

from pytest_modelprof._files import write_text_atomic
from pytest_modelprof.ci import on_github_actions
from pytest_modelprof.errors import ReportError

if TYPE_CHECKING:
    from pytest_modelprof.results.document import RunResults
    from pytest_modelprof.results.outputs import ReportSettings
    from pytest_modelprof.results.record import ProfileResult, SourceLocation

__all__ = ["SessionReports", "write_outputs"]


def write_outputs(
    results: RunResults,
    *,
    html: Path | None = None,
    json: Path | None = None,
    markdown: Path | None = None,
) -> list[Path]:
    """Render ``results`` into the given files; returns the paths written."""
    from pytest_modelprof.report.view import build_view

    written = []
    view = build_view(results)
    outputs: list[tuple[Path | None, str]] = []
    if json is not None:
        outputs.append((json, results.to_json()))
    if html is not None:
        from pytest_modelprof.report.html import render_html

        outputs.append((html, render_html(view)))
    if markdown is not None:
        from pytest_modelprof.report.markdown import render_markdown

        outputs.append((markdown, render_markdown(view)))
    for path, text in outputs:
        if path is None:
            continue
        try:
            write_text_atomic(path, text)
        except OSError as exc:
            raise ReportError(f"cannot write {path}: {exc.strerror or exc}") from exc
        written.append(path)
    return written


@dataclass
class SessionReports:
    """Collects what the reports need during the run and writes them at the end."""

    options: ReportSettings
    rootdir: Path
    env: Mapping[str, str] = field(default_factory=lambda: dict(os.environ))
    started: datetime = field(default_factory=lambda: datetime.now(timezone.utc))
    records: list[ProfileResult] = field(default_factory=list)
    locations: dict[str, SourceLocation] = field(default_factory=dict)

    def add_record(self, record: ProfileResult) -> None:
        """One gated profile (called on the controller only)."""
        self.records.append(record)

    def add_location(self, nodeid: str, path: str, line0: int | None) -> None:
        """A test's ``report.location``: a rootdir-relative path and a 0-based line."""
        from pytest_modelprof.results.record import SourceLocation

        if nodeid not in self.locations and line0 is not None:
            self.locations[nodeid] = SourceLocation(
                path=Path(path).as_posix(), line=line0 + 1
            )

    def results(self, exit_status: int | None = None) -> RunResults:
        """The results document of the run so far."""
        from pytest_modelprof.results.document import collect_run_info, results_from_records

        profiles = [r.profile for r in self.records if r.profile is not None]
        run = collect_run_info(
            rootdir=self.rootdir,
            env=self.env,
            started=self.started,
            finished=datetime.now(timezone.utc),
            profiles=profiles,
            artifact_url=self.options.artifact_url,
            exit_status=exit_status,
        )
        if self.options.html is None and self.options.artifact_url is None:
            # Nothing to link to: the job summary must not point at a report never written.
            run = run.model_copy(update={"artifact_url": None})
        return results_from_records(self.records, self.locations, run)

    def finish(self, exit_status: int | None) -> tuple[list[str], list[str]]:
        """Write every requested output; returns (lines for the terminal, annotation lines)."""
        opts = self.options
        github = opts.github and bool(self.records)
        summary_path = self.env.get("GITHUB_STEP_SUMMARY") if github else None
        annotate = github and on_github_actions(self.env)
        if not (opts.any_file or summary_path or annotate):
            return [], []
        results = self.results(exit_status)
        notes = [
            f"modelprof: wrote {kind} report to {path}"
            for kind, path in (("JSON", opts.json), ("HTML", opts.html),
                               ("Markdown", opts.markdown))
            if path is not None
        ]
        write_outputs(results, html=opts.html, json=opts.json, markdown=opts.markdown)
        if summary_path:
            from pytest_modelprof.report.github import append_step_summary
            from pytest_modelprof.report.markdown import render_step_summary
            from pytest_modelprof.report.view import build_view

            try:
                append_step_summary(summary_path, render_step_summary(build_view(results)))
            except OSError as exc:
                notes.append(f"modelprof: cannot write the job summary {summary_path}: {exc}")
        lines: list[str] = []
        if annotate:
            from pytest_modelprof.report.github import annotation_lines

            lines = annotation_lines(
                results, rootdir=self.rootdir, workspace=self.env.get("GITHUB_WORKSPACE")
            )
        return notes, lines
