"""No torch in runs that use no marker, and ``-p no:modelprof`` disables everything."""

from __future__ import annotations

import pytest

RECORDER = """
import sys

def pytest_sessionfinish(session):
    with open("modules.txt", "w") as f:
        f.write(f"torch={'torch' in sys.modules} pydantic={'pydantic' in sys.modules}")
"""


def test_no_torch_without_markers(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(RECORDER)
    pytester.makepyfile(test_plain="def test_a():\n    assert True\n")
    result = pytester.runpytest_subprocess()
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["plugins:*modelprof*"])  # the plugin is loaded ...
    assert (
        pytester.path / "modules.txt"
    ).read_text() == "torch=False pydantic=False"  # ... lightly


def test_disabled_plugin(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_a="""
        import pytest

        @pytest.mark.profile(model="fake:tiny")
        def test_x():
            pass
        """
    )
    result = pytester.runpytest("-p", "no:modelprof", "--modelprof-update-baselines")
    assert result.ret == pytest.ExitCode.USAGE_ERROR  # the options are gone with the plugin
    # A subprocess: pytest >= 9.2 lets an in-process run inherit this suite's
    # ``filterwarnings = error``, which would make the unknown-mark warning an error.
    result = pytester.runpytest_subprocess("-p", "no:modelprof")
    result.assert_outcomes(passed=1)  # the unregistered marker is inert without --strict-markers
    assert "modelprof" not in result.stdout.str()
    assert not (pytester.path / "baselines").exists()
