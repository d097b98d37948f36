"""Corrupt baselines and baselines from a newer schema fail the test with a clear message."""

from __future__ import annotations

import json

from modelprof_testing import Project

TEST = """
import pytest

@pytest.mark.profile(model="fake:tiny")
def test_x():
    pass
"""


def _write(project: Project) -> None:
    project.pytester.makepyfile(test_a=TEST)
    project.run("--modelprof-update-baselines").assert_outcomes(passed=1)


def test_corrupt_file(project: Project) -> None:
    _write(project)
    path = project.root / "baselines" / "test_a" / "test_x.json"
    path.write_text('{"schema_version": 1, "metrics": ')
    result = project.run()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*baselines/test_a/test_x.json: corrupt baseline (not valid JSON*Delete it and run "
            "`pytest --modelprof-update-baselines` to write it again.",
            "error  *test_a.py::test_x*",
        ]
    )
    project.run("--modelprof-update-baselines").stdout.fnmatch_lines(
        ["updated  test_a.py::test_x*"]
    )
    project.run().assert_outcomes(passed=1)


def test_invalid_document(project: Project) -> None:
    _write(project)
    path = project.root / "baselines" / "test_a" / "test_x.json"
    data = json.loads(path.read_text())
    del data["metrics"]
    path.write_text(json.dumps(data))
    result = project.run()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*test_x.json: corrupt baseline (metrics: Field required)*"])


def test_newer_schema(project: Project) -> None:
    _write(project)
    path = project.root / "baselines" / "test_a" / "test_x.json"
    path.write_text(path.read_text().replace('"schema_version": 3', '"schema_version": 7'))
    result = project.run()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        ["*test_x.json: baseline schema_version 7 is newer than this pytest-modelprof understands*"]
    )
