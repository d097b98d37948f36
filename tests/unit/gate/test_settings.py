"""Settings: precedence marker > CLI > ini > built-in, and errors that name their source."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from pytest_modelprof.baseline.tolerance import Budget, Exact, Ignore, Relative
from pytest_modelprof.errors import SettingsError
from pytest_modelprof.gate.limits import BUILTIN_LIMIT_NAMES, SETTINGS, Limits
from pytest_modelprof.gate.marker import MARKER_SIGNATURE, resolve_marker
from pytest_modelprof.gate.settings import cli_flag, ini_key, resolve_session
from pytest_modelprof.gate.shapes import parse_input_shape

ROOT = Path("/repo")


def session(cli: dict[str, object] | None = None, ini: dict[str, object] | None = None):  # type: ignore[no-untyped-def]
    return resolve_session(cli or {}, ini or {}, rootdir=ROOT, invocation_dir=ROOT / "sub")


def test_defaults() -> None:
    s = session()
    assert s.baseline_dir == ROOT.resolve() / "baselines"
    assert (s.update, s.fail_on_improvement, s.prune) == (False, False, False)
    policy = s.limits.policy()
    assert policy.tolerances == {} and policy.budgets == {}
    assert s.limits.fvcore is False and s.limits.max_fvcore_delta == Relative(0.05)


def test_cli_over_ini_over_default() -> None:
    s = session(
        cli={"limit": ["max_flops_delta=0.2"], "fail_on_improvement": True},
        ini={"limit": ["max_flops_delta = 0.1", "max_params_delta=5%"],
             "fail_on_improvement": "false"},
    )
    assert s.limits.tolerances["flops"] == Relative(0.2)
    assert s.limits.tolerances["params"] == Relative(0.05)
    assert s.fail_on_improvement is True
    assert session(ini={"fail_on_improvement": "true"}).fail_on_improvement is True


def test_a_later_item_wins() -> None:
    s = session(cli={"limit": ["max_flops_delta=0.2", "max_flops_delta=ignore"]})
    assert s.limits.tolerances["flops"] == Ignore()


def test_marker_over_cli() -> None:
    base = session(cli={"limit": ["max_flops_delta=0.2", "max_flops=9G"]}).limits
    spec = resolve_marker((), {"max_flops_delta": 0.01, "max_flops": "ignore"}, base, where="t::x")
    assert spec.limits.tolerances["flops"] == Relative(0.01)
    assert "flops" not in spec.limits.budgets  # "ignore" on the marker removes a CLI budget
    # None is "not given": the CLI's limits hold, and nothing becomes explicit.
    kept = resolve_marker((), {"max_flops_delta": None, "max_flops": None}, base, where="t::x")
    assert kept.limits.tolerances["flops"] == Relative(0.2)
    assert kept.limits.budgets["flops"] == Budget(9e9)
    assert spec.request is None


def test_baseline_dir_relative_to_source() -> None:
    assert session(cli={"baseline_dir": "b"}).baseline_dir == (ROOT / "sub" / "b").resolve()
    assert session(ini={"baseline_dir": "b"}).baseline_dir == (ROOT / "b").resolve()
    ini_dir = resolve_session(
        {}, {"baseline_dir": "b"}, rootdir=ROOT, invocation_dir=ROOT, ini_dir=ROOT / "cfg"
    )
    assert ini_dir.baseline_dir == (ROOT / "cfg" / "b").resolve()


def test_errors_name_their_source() -> None:
    with pytest.raises(
        SettingsError, match=r"^--modelprof-limit: bad value for max_flops_delta='x'"
    ):
        session(cli={"limit": ["max_flops_delta=x"]})
    with pytest.raises(
        SettingsError, match=r"^ini modelprof_limits: bad value for max_traffic='lots'"
    ):
        session(ini={"limit": ["max_flops_delta=5%", "max_traffic=lots"]})
    with pytest.raises(
        SettingsError,
        match=r"^ini modelprof_fail_on_improvement: bad value for fail_on_improvement='maybe'",
    ):
        session(ini={"fail_on_improvement": "maybe"})
    with pytest.raises(
        SettingsError, match=r"^ini modelprof_timing_verdicts: bad value for timing_verdicts"
    ):
        session(ini={"timing_verdicts": "strict"})
    with pytest.raises(
        SettingsError, match=r"^marker on t.py::test_x: bad value for max_intensity_delta=-1"
    ):
        resolve_marker((), {"max_intensity_delta": -1}, Limits(), where="t.py::test_x")


def test_unknown_marker_argument_is_named() -> None:
    with pytest.raises(SettingsError) as info:
        resolve_marker((), {"max_flop_delta": 0.1, "bogus": 1}, Limits(), where="t.py::test_x")
    message = str(info.value)
    assert message.startswith("marker on t.py::test_x: unknown arguments bogus, max_flop_delta")
    assert "did you mean 'max_flops_delta'" in message  # a near miss gets a suggestion
    # A word nothing resembles gets the limit patterns, never the whole signature.
    assert "max_<metric>_delta" in message and MARKER_SIGNATURE not in message
    assert len(message) < 300, len(message)


def test_a_positional_error_is_short() -> None:
    with pytest.raises(SettingsError) as info:
        resolve_marker(("a", "b"), {}, Limits(), where="t.py::test_x")
    assert "at most one positional" in str(info.value) and len(str(info.value)) < 200


@pytest.mark.parametrize(
    ("items", "message"),
    [
        (["max_flop_delta=0.1"], "--modelprof-limit: 'max_flop_delta' is not a limit; did you "
         "mean 'max_flops_delta'"),
        (["fail_on_uncounted=true"], "--modelprof-limit: 'fail_on_uncounted' is a setting, not "
         "a limit; set it as @pytest.mark.profile(fail_on_uncounted=...)"),
        (["max_flops_delta"], "--modelprof-limit: expected NAME=VALUE such as "
         "max_flops_delta=5%, got 'max_flops_delta'"),
    ],
)
def test_a_bad_limit_name_is_named_with_the_nearest(items: list[str], message: str) -> None:
    with pytest.raises(SettingsError) as info:
        session(cli={"limit": items})
    assert str(info.value).startswith(message), str(info.value)


def test_marker_model_positional_or_keyword() -> None:
    spec = resolve_marker(
        ("resnet18",), {"input_shape": [1, 3, 64, 64], "name": "r"}, Limits(), where="x"
    )
    assert spec.request is not None
    assert spec.request.model == "resnet18"
    assert spec.request.input_shape == (1, 3, 64, 64)
    assert spec.request.name == "r"
    with pytest.raises(SettingsError, match="both positionally"):
        resolve_marker(("a",), {"model": "b"}, Limits(), where="x")
    with pytest.raises(SettingsError, match="at most one positional"):
        resolve_marker(("a", "b"), {}, Limits(), where="x")
    with pytest.raises(SettingsError, match="name=''"):
        resolve_marker((), {"name": ""}, Limits(), where="x")


def test_budgets_parse_their_units() -> None:
    spec = resolve_marker(
        (),
        {"max_flops": "9G", "max_params": "30M", "max_traffic": "120MB", "max_latency": "5ms"},
        Limits(),
        where="x",
    )
    assert spec.limits.budgets == {
        "flops": Budget(9e9),
        "params": Budget(30e6),
        "traffic": Budget(120e6),
        "latency": Budget(5.0),
    }
    assert spec.limits.explicit == {"flops", "params", "traffic", "latency"}


def test_fvcore_settings() -> None:
    spec = resolve_marker((), {"fvcore": True, "max_fvcore_delta": 0.1}, Limits(), where="x")
    assert spec.limits.fvcore is True and spec.limits.max_fvcore_delta == Relative(0.1)
    assert session(cli={"fvcore": True}).limits.fvcore is True
    with pytest.raises(SettingsError, match="'fvcore' is a setting, not a limit"):
        session(ini={"limit": ["fvcore=true"]})
    with pytest.raises(SettingsError, match="fvcore"):
        resolve_marker((), {"fvcore": "perhaps"}, Limits(), where="x")


def test_describe_lists_every_effective_limit() -> None:
    limits = Limits().with_values({"max_flops_delta": 0.1, "max_flops": "9G"}, "x")
    described = limits.describe()
    assert described["max_flops_delta"] == "+10.0 %"
    assert described["max_flops"] == "9e+09"
    assert described["max_intensity_delta"] == "ignored"  # derived: judged only when set
    assert described["max_latency_delta"] == "ignored"
    assert "fvcore" not in described


def test_ignore_and_exact_words() -> None:
    limits = Limits().with_values({"max_flops_delta": "ignore", "max_params_delta": "exact"}, "x")
    assert limits.tolerances == {"flops": Ignore(), "params": Exact()}


def test_input_shape_forms() -> None:
    assert parse_input_shape((1, 3, 8, 8), "x") == (1, 3, 8, 8)
    assert parse_input_shape([[1, 8], [1, 4]], "x") == ((1, 8), (1, 4))
    assert parse_input_shape(None, "x") is None
    with pytest.raises(SettingsError, match="^marker on t: input_shape='big'"):
        parse_input_shape("big", "marker on t")


def test_flag_and_ini_names() -> None:
    assert cli_flag("fail_on_improvement") == "--modelprof-fail-on-improvement"
    assert ini_key("fail_on_improvement") == "modelprof_fail_on_improvement"
    assert "max_fvcore_delta" in BUILTIN_LIMIT_NAMES and "fvcore" in SETTINGS
    assert not set(SETTINGS) & set(BUILTIN_LIMIT_NAMES)


def test_sweep_marker_values_are_validated() -> None:
    from pytest_modelprof.gate.shapes import parse_sweep

    assert parse_sweep({"batch": [1, 8, 32]}, "marker on t") == {"batch": [1, 8, 32]}
    # A builder keyword is an axis too: the named model is rebuilt with each value.
    assert parse_sweep({"depth": [1, 2]}, "marker on t") == {"depth": [1, 2]}
    for bad in ({}, {"batch": [8]}, {"batch": [8, 1]}, {"not a name": [1, 2]}, {"batch": "1,2"}):
        with pytest.raises(SettingsError, match="marker on t: sweep=.* is not a sweep"):
            parse_sweep(bad, "marker on t")


def test_growth_limit_in_a_marker_needs_a_sweep() -> None:
    with pytest.raises(SettingsError, match="max_flops_growth needs a sweep"):
        resolve_marker((), {"model": "m", "max_flops_growth": 1.1}, Limits(), where="t")
    spec = resolve_marker(
        (), {"model": "m", "sweep": {"seq_len": [8, 16]}, "max_flops_growth": "1.1"},
        Limits(), where="t",
    )
    assert spec.sweep == {"seq_len": [8, 16]} and spec.limits.growth == {
        "max_flops_growth": 1.1
    }


def test_timing_settings() -> None:
    limits = Limits().with_values({"max_latency_delta": 0.1, "timing_verdicts": "fail"}, "ini")
    assert limits.wants_latency and limits.timing_fails is True and limits.timing_rounds == 100
    assert Limits().with_values({"timing_verdicts": "warn"}, "x").timing_fails is False
    assert Limits().timing_fails is None
    with pytest.raises(SettingsError, match="did you mean 'warn'"):
        Limits().with_values({"timing_verdicts": "wran"}, "marker on t")
    with pytest.raises(SettingsError, match="timing_rounds must be an integer from 10 to"):
        Limits().with_values({"timing_rounds": 5}, "marker on t")
    assert not Limits().wants_latency


@pytest.mark.parametrize(
    ("key", "raw", "message"),
    [
        pytest.param("max_flops_delta", 10**400, "max_flops_delta=1000000000\u2026 (401 digits): "
                     "a tolerance must be a finite fraction >= 0", id="delta-10**400"),
        pytest.param("max_flops", 10**400, "max_flops=1000000000\u2026 (401 digits): a budget "
                     "must be a finite number >= 0", id="budget-10**400"),
        pytest.param("max_latency_growth", 10**400,
                     "a growth exponent must be a finite number > 0", id="exponent-10**400"),
        pytest.param("timing_rounds", 10**400,
                     "timing_rounds must be an integer from 10 to 100,000", id="rounds-10**400"),
        pytest.param("timing_rounds", "1e9",
                     "timing_rounds must be an integer from 10 to 100,000", id="rounds-1e9"),
        # Past Python's digit limit for str(): not even repr() works on it.
        pytest.param("max_flops_delta", 10**5000,
                     "max_flops_delta=an integer of about 5001 digits: ", id="delta-10**5000"),
        pytest.param("max_latency_growth", 10**5000,
                     "a growth exponent must be a finite number", id="exponent-10**5000"),
        pytest.param("timing_rounds", 10**5000,
                     "timing_rounds must be an integer from 10 to 100,000", id="rounds-10**5000"),
    ],
)
def test_absurd_numbers_are_one_line_naming_the_limit(key: str, raw: object, message: str) -> None:
    with pytest.raises(SettingsError) as caught:
        resolve_marker((), {key: raw}, Limits(), where="t.py::test_x")
    text = str(caught.value)
    assert text.startswith(f"marker on t.py::test_x: bad value for {key}=") and message in text
    assert "\n" not in text and len(text) < 300, text


def test_the_signature_names_every_argument_and_setting() -> None:
    from pytest_modelprof.gate.marker import MARKER_ARGS

    named = set(re.findall(r"[(, ](\w+)=", MARKER_SIGNATURE))
    assert named == {*MARKER_ARGS, *SETTINGS}
