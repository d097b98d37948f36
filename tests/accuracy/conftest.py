"""The ``zoo`` marker: whole third-party zoos run only when ``-m`` names them."""

from __future__ import annotations

import pytest


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    # The README's `python -m pytest -n 2` stays quick: it checks each zoo's quick subset
    # (zoo(quick=True)), and `-m zoo` (or any -m expression naming it) runs every architecture.
    if "zoo" in (config.getoption("markexpr") or ""):
        return
    skip = pytest.mark.skip(reason="part of a whole zoo: run with -m zoo (tests/accuracy/)")
    for item in items:
        marker = item.get_closest_marker("zoo")
        if marker is not None and not marker.kwargs.get("quick", False):
            item.add_marker(skip)
