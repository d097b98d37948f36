"""One verdict for one change (issue 17): the gate and ``modelprof compare`` agree, a model's
own change is not blamed on the environment, and every limit the user set is judged."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from modelprof_testing import Project

# -- a limit the user set is never skipped --------------------------------------------------------

BREAKS = """
import pytest

@pytest.mark.profile(model="fake:tiny", max_subgraphs_delta=0)
def test_tiny():
    pass
"""


def _add_metric(project: Project, name: str, value: float) -> None:
    (path,) = (project.root / "baselines").rglob("*.json")
    data = json.loads(path.read_text())
    data["metrics"][name] = value
    path.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")


def test_an_unmeasured_limit_fails_with_and_without_a_baseline(project: Project) -> None:
    project.pytester.makepyfile(test_models=BREAKS)
    # The fake engine measures no fused subgraphs: the limit cannot be judged, without a baseline...
    first = project.run("--modelprof-update-baselines")
    first.assert_outcomes(failed=1)
    first.stdout.fnmatch_lines(["*subgraphs: a limit is set (max_subgraphs_delta=*)*"])
    # ...and with a baseline that holds the metric (say, from a run that did measure it).
    _add_metric(project, "subgraphs", 3)
    again = project.run()
    again.assert_outcomes(failed=1)
    again.stdout.fnmatch_lines(
        ["*subgraphs: a limit is set (max_subgraphs_delta=*) but this profile does not measure*"]
    )
