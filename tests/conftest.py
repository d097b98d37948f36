"""Suite-wide fixtures."""

from __future__ import annotations

import importlib
import importlib.util

import pytest


@pytest.fixture(autouse=True)
def _torchvision_outlives_inner_runs(request: pytest.FixtureRequest) -> None:
    """Import torchvision before an in-process pytester run can.

    An in-process run restores ``sys.modules`` afterwards, so modules it imported first are
    dropped and imported again by a later test. torchvision pulls in
    ``torch._inductor.test_operators``, whose second import registers the ``_inductor_test``
    library twice and raises (seen when ``test_reports_real.py`` ran before ``test_cli.py`` in
    one worker). Imported here, in the outer session, it is part of the snapshot and kept.
    """
    if "pytester" in request.fixturenames and importlib.util.find_spec("torchvision"):
        importlib.import_module("torchvision")
