"""Fixtures for the pytester integration tests; the helpers live in ``modelprof_testing``."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from modelprof_testing import Project


@pytest.fixture
def project(pytester: pytest.Pytester) -> Iterator[Project]:
    """A fresh project with the fake engine and ``tiny`` at 1 MFLOPs."""
    yield Project(pytester)
