"""One naming convention for what users type: limits, settings, flags and ini keys.

A limit is ``max_<metric>`` (an absolute budget), ``max_<metric>_delta`` (relative to the
baseline) or ``max_<metric>_growth`` (a sweep's growth exponent), ``<metric>`` a name of the
metric table and the unit in the value, never in the name. Settings are not limits. Every
``--modelprof-<key>`` flag and ``modelprof_<key>`` ini key comes from the one option table.
"""

from __future__ import annotations

import re
from typing import Any

import pytest

from pytest_modelprof._options import OPTIONS, add_options
from pytest_modelprof.baseline.metrics import BUILTIN_METRICS
from pytest_modelprof.gate.limits import BUILTIN_LIMIT_NAMES, SETTINGS
from pytest_modelprof.gate.marker import MARKER_ARGS
from pytest_modelprof.gate.settings import SESSION_SETTINGS, cli_flag, ini_key

#: The FLOPs' disagreement with fvcore's count (``fvcore=True``): a quantity with a limit of its
#: own (``max_fvcore_delta``) that is not a row of the metric table.
FVCORE: frozenset[str] = frozenset({"max_fvcore_delta"})
UNIT_SUFFIXES = ("ms", "s", "bytes", "exponent", "drop")

def _expected(name: str) -> set[str]:
    """The names the metric table allows for limit ``name``: its metric's own three forms."""
    allowed = set(FVCORE)
    for metric in BUILTIN_METRICS:
        forms = {
            "delta_key": f"max_{metric.name}_delta",
            "budget_key": f"max_{metric.name}",
            "growth_key": f"max_{metric.name}_growth",
        }
        for field, form in forms.items():
            if getattr(metric, field) == name:
                allowed.add(form)
    return allowed


@pytest.mark.parametrize("name", BUILTIN_LIMIT_NAMES)
def test_every_limit_is_named_for_its_metric_without_a_unit(name: str) -> None:
    assert name in _expected(name), f"{name}: expected one of {sorted(_expected(name))}"
    units = re.search(rf"_({'|'.join(UNIT_SUFFIXES)})(_|$)", name)
    assert units is None, f"{name}: the unit goes in the value, not the name"


def test_settings_are_not_limits() -> None:
    assert not set(SETTINGS) & set(BUILTIN_LIMIT_NAMES)
    assert not set(SETTINGS) & set(MARKER_ARGS) and not set(MARKER_ARGS) & set(BUILTIN_LIMIT_NAMES)
    assert set(SESSION_SETTINGS) <= set(SETTINGS)
    assert not [s for s in SETTINGS if s.startswith("max_") or "strict" in s]


class _Recorder:
    """Stands in for pytest's parser: the flags, their ``dest`` and the ini keys registered."""

    def __init__(self) -> None:
        self.flags: dict[str, str] = {}
        self.ini: list[str] = []
        self.groups: set[str] = set()

    def getgroup(self, name: str, *args: Any) -> _Recorder:
        self.groups.add(name)
        return self

    def addoption(self, *names: str, **kwargs: Any) -> None:
        (flag,) = names
        self.flags[flag] = kwargs["dest"]

    def addini(self, name: str, *args: Any) -> None:
        self.ini.append(name)


def test_every_flag_and_ini_key_comes_from_the_option_table() -> None:
    parser = _Recorder()
    add_options(parser)  # type: ignore[arg-type]
    assert parser.groups == {"modelprof"}  # one group
    assert parser.flags == {cli_flag(o.key): ini_key(o.key) for o in OPTIONS}
    assert parser.ini == [ini_key(o.ini) for o in OPTIONS if o.ini is not None]
    for option in OPTIONS:
        assert re.fullmatch(r"[a-z]+(_[a-z]+)*", option.key), option.key
        # An ini key is the flag's name, or its plural where it lists what the flag repeats.
        assert option.ini in (None, option.key, option.key + "s"), option.key
    # No limit has an option of its own: they all go through --modelprof-limit.
    assert not [o.key for o in OPTIONS if o.key in BUILTIN_LIMIT_NAMES or o.key.startswith("max_")]
    # A setting with a flag is one of the settings, under its own name.
    assert {o.key for o in OPTIONS if o.key in SETTINGS} == {*SESSION_SETTINGS, "fvcore"}
