"""Fixtures of the report tests; the samples live in ``report_samples``."""

from __future__ import annotations

import pytest
from report_samples import make_results

from pytest_modelprof.results.document import RunResults


@pytest.fixture
def results() -> RunResults:
    return make_results()
