"""Smoke test of the callgrind client requests ``_compat`` wraps (torch._C._valgrind_*)."""

from __future__ import annotations

import sys


def test_callgrind_client_requests_exist_and_are_no_ops_outside_valgrind() -> None:
    from pytest_modelprof import _compat

    # Linux builds of torch compile the requests in; outside valgrind they do nothing.
    if sys.platform == "linux":
        assert _compat.valgrind_supported()
    _compat.callgrind_toggle()
    _compat.callgrind_toggle()
    _compat.callgrind_toggle_and_dump()
