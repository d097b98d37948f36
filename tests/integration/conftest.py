"""Fixtures for the pytester integration tests; the helpers live in ``modelprof_testing``."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from modelprof_testing import Project


@pytest.fixture
def project(pytester: pytest.Pytester) -> Iterator[Project]:
    """A fresh project with the fake engine and ``tiny`` at 1 MFLOPs."""
    yield Project(pytester)


@pytest.fixture(autouse=True)
def _wide_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    """Inner runs write to a wide terminal: tests match what is said, not where a line wraps
    (test_output_width.py sets COLUMNS itself to check the fitting)."""
    monkeypatch.setenv("COLUMNS", "1000")


@pytest.fixture(autouse=True)
def _no_github_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """Inner pytest runs must not append to the real job summary or annotate the real CI run."""
    import os

    for name in list(os.environ):
        if name.startswith("GITHUB_") or name == "MODELPROF_ARTIFACT_URL":
            monkeypatch.delenv(name)


@pytest.fixture(autouse=True)
def _not_on_ci(monkeypatch: pytest.MonkeyPatch) -> None:
    """Inner runs behave as in a terminal: on CI (``CI`` or ``BUILD_NUMBER`` set, as .ci/run
    does) pytest prints its short summary lines whole, which is pytest's output, not ours."""
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.delenv("BUILD_NUMBER", raising=False)
