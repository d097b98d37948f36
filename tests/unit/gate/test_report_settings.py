"""Which report files a run writes: CLI over ini, each path relative to where it was given,
and a wrong suffix or GitHub mode refused naming the flag or ini key that set it."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_modelprof.errors import SettingsError
from pytest_modelprof.gate.report_settings import check_report_path, resolve_reports


def test_cli_paths_are_relative_to_the_invocation_and_ini_paths_to_the_ini(
    tmp_path: Path,
) -> None:
    here, ini_dir = tmp_path / "here", tmp_path / "project"
    settings = resolve_reports(
        {"report": "out/r.html", "markdown": None},
        {"report": "ignored.html", "json": "results.json", "markdown": "", "github": "OFF"},
        invocation_dir=here,
        ini_dir=ini_dir,
    )
    assert settings.html == (here / "out" / "r.html").resolve()  # the CLI wins over the ini
    assert settings.json == (ini_dir / "results.json").resolve()
    assert settings.markdown is None  # an empty ini value sets nothing
    assert settings.github is False
    assert settings.artifact_url is None


def test_nothing_given_writes_no_file_and_keeps_the_job_summary(tmp_path: Path) -> None:
    settings = resolve_reports({}, {}, invocation_dir=tmp_path, ini_dir=tmp_path)
    assert (settings.html, settings.json, settings.markdown) == (None, None, None)
    assert settings.github is True


def test_the_artifact_link_comes_from_the_cli_before_the_ini(tmp_path: Path) -> None:
    def url(cli: dict[str, object]) -> str | None:
        return resolve_reports(
            cli, {"artifact_url": "https://ini/a"}, invocation_dir=tmp_path, ini_dir=tmp_path
        ).artifact_url

    assert url({"artifact_url": "https://cli/a"}) == "https://cli/a"
    assert url({}) == "https://ini/a"


@pytest.mark.parametrize(
    ("cli", "ini", "problem"),
    [
        ({"json": "results.html"}, {}, "--modelprof-json: 'results.html' should end in .json"),
        (
            {},
            {"markdown": "r.txt"},
            "ini modelprof_markdown: 'r.txt' should end in .md or .markdown",
        ),
        ({"github": "always"}, {}, "--modelprof-github: expected one of auto, off, got 'always'"),
        ({}, {"github": "yes"}, "ini modelprof_github: expected one of auto, off, got 'yes'"),
    ],
)
def test_a_wrong_value_names_where_it_was_set(
    tmp_path: Path, cli: dict[str, object], ini: dict[str, object], problem: str
) -> None:
    with pytest.raises(SettingsError) as caught:
        resolve_reports(cli, ini, invocation_dir=tmp_path, ini_dir=tmp_path)
    assert str(caught.value) == problem


def test_a_blank_path_says_what_file_is_expected() -> None:
    with pytest.raises(SettingsError, match="expected a file path ending in .html or .htm"):
        check_report_path("report", "  ")
    assert check_report_path("report", "R.HTML") == "R.HTML"  # the suffix in any case
