"""Fixtures of the results tests: the sample run the report tests use (``report_samples``)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parents[1] / "report"))
from report_samples import make_results  # noqa: E402

from pytest_modelprof.results.document import RunResults  # noqa: E402


@pytest.fixture
def results() -> RunResults:
    return make_results()
