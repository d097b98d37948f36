"""--modelprof-report: the HTML diff report of a run, checked in a real browser."""

from __future__ import annotations

import struct
from pathlib import Path

from modelprof_testing import Project
from report_testing import EVIL_ID, browser, regressing_project


def test_html_report_of_a_regression(project: Project) -> None:
    regressing_project(project)
    result = project.run("--modelprof-report=out/report.html")
    result.assert_outcomes(passed=1, failed=1)
    page = project.root / "out" / "report.html"
    result.stdout.fnmatch_lines([f"modelprof: wrote HTML report to {page}"])
    text = page.read_text()
    assert EVIL_ID not in text and "&lt;script&gt;alert(1)&lt;/script&gt;" in text
    assert "head&amp;&lt;b&gt;" in text and "head&<b>" not in text
    assert text.index("test_models.py::test_tiny") < text.index("test_models.py::test_other")
    assert "FLOPs: 1 MFLOPs \u2192 1.3 MFLOPs (+30.0 %, limit +10.0 %)" in text
    assert 'data-status="regressed"' in text and "defined at <code>test_models.py:3</code>" in text


def test_html_report_renders_in_chromium(project: Project, tmp_path: Path) -> None:
    chromium = browser()
    regressing_project(project)
    project.run("--modelprof-report=report.html").assert_outcomes(passed=1, failed=1)
    page = project.root / "report.html"
    dom, console = chromium.load(page, tmp_path)
    assert console == []  # no script errors, no failed loads
    assert '<html lang="en" data-ready="true">' in dom  # our script ran to the end
    assert dom.count('<section class="profile') == 2
    # Per-layer bars and the roofline; the fake engine has no op families (a note instead).
    assert dom.count("<svg") == 4 and dom.count("<circle") >= 2
    assert "This profile has no op-family breakdown." in dom
    assert "<script>alert(1)</script>" not in dom  # the id stayed text after parsing
    png = tmp_path / "report.png"
    chromium.screenshot(page, png)
    header = png.read_bytes()[:24]
    assert header[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", header[16:24])
    assert (width, height) == (1280, 2400)


def test_report_path_must_be_html(project: Project) -> None:
    result = project.run("--modelprof-report=report.txt")
    result.stderr.fnmatch_lines(["*--modelprof-report*'report.txt' should end in .html or .htm*"])
    assert result.ret == 4


def test_report_path_from_the_ini_file(project: Project) -> None:
    regressing_project(project)
    project.pytester.makeini("[pytest]\nmodelprof_report = reports/ini.html\n")
    project.run().assert_outcomes(passed=1, failed=1)
    assert (project.root / "reports" / "ini.html").is_file()


def test_no_profiled_tests_still_writes_a_report(project: Project) -> None:
    project.pytester.makepyfile(test_plain="def test_plain():\n    pass\n")
    project.run("--modelprof-report=r.html").assert_outcomes(passed=1)
    assert "No profiled test ran" in (project.root / "r.html").read_text()


SIX_TESTS = """
import pytest

@pytest.mark.parametrize("variant", ["imagenet-224px-batch-32"])
@pytest.mark.profile(model="fake:backbone")
def test_backbone_cost_of_the_production_configuration(variant):
    pass

@pytest.mark.profile(model="fake:head")
def test_detection_head_cost_of_the_production_configuration():
    pass

@pytest.mark.parametrize("n", [1, 2, 3, 4])
@pytest.mark.profile(model="fake:steady")
def test_steady(n):
    pass
"""


def test_html_overview_fits_two_regressions_on_the_first_screen(
    project: Project, tmp_path: Path
) -> None:
    """At 1,400 x 900 both regressed tests and their reasons are on the first screen,
    the reason column is readable and test ids do not break mid-word. The screenshot is kept
    as ``overview-1400x900.png`` in this test's tmp_path."""
    import html
    import json
    import re

    from report_testing import MEASURE_OVERVIEW

    chromium = browser()
    project.pytester.makepyfile(test_team=SIX_TESTS)
    steady = {"flops": 5_000_000, "memory": 400_000}
    project.set_costs(backbone={"flops": 1_000_000, "memory": 100_000, "peak": 50_000},
                      head={"flops": 2_000_000, "memory": 200_000}, steady=steady)
    project.run("--modelprof-update-baselines").assert_outcomes(passed=6)
    project.set_costs(backbone={"flops": 1_300_000, "memory": 150_000, "peak": 90_000},
                      head={"flops": 2_600_000, "memory": 260_000, "peak": 180_000},
                      steady=steady)
    project.run("--modelprof-report=report.html").assert_outcomes(passed=4, failed=2)
    page = tmp_path / "overview.html"
    page.write_text((project.root / "report.html").read_text().replace(
        "</body>", MEASURE_OVERVIEW + "</body>"))
    png = tmp_path / "overview-1400x900.png"
    chromium.screenshot(page, png, width=1400, height=900)
    dom, console = chromium.load(page, tmp_path, "--window-size=1400,900")
    assert console == []
    found = re.search(r'data-measure="([^"]*)"', dom)
    assert found is not None, "the measuring script did not run"
    measure = json.loads(html.unescape(found.group(1)))
    assert measure["width"] == 1400
    regressed = [r for r in measure["rows"] if "v-regressed" in r["css"]]
    assert len(regressed) == 2 and len(measure["rows"]) == 6
    for row in regressed:
        assert "FLOPs" in row["why"] and "traffic" in row["why"]
        assert row["whyWidth"] >= 400, row  # readable, not a 60 px sliver
        assert row["whyBottom"] <= 900, row  # the reason is on the first screen too
    assert all(r["testBreak"] != "break-all" and r["testWrap"] != "anywhere"
               for r in measure["rows"])


MEASURE_WIDTH = """
<script>
(() => {
  const table = document.querySelector("table.summary");
  document.body.dataset.width = JSON.stringify({
    window: window.innerWidth,
    page: document.documentElement.scrollWidth,
    overview: table ? Math.ceil(table.getBoundingClientRect().right) : null,
  });
})();
</script>
"""


def test_html_overview_fits_a_1280_px_window(project: Project, tmp_path: Path) -> None:
    """The overview (the summary table of every test) and the page itself need no horizontal
    scrolling in a 1,280 px window, with long test ids and a regression's reasons."""
    import html
    import json
    import re

    chromium = browser()
    project.pytester.makepyfile(test_team=SIX_TESTS)
    steady = {"flops": 5_000_000, "memory": 400_000}
    project.set_costs(backbone={"flops": 1_000_000, "memory": 100_000, "peak": 50_000},
                      head={"flops": 2_000_000, "memory": 200_000}, steady=steady)
    project.run("--modelprof-update-baselines").assert_outcomes(passed=6)
    project.set_costs(backbone={"flops": 1_300_000, "memory": 150_000, "peak": 90_000},
                      head={"flops": 2_600_000, "memory": 260_000, "peak": 180_000},
                      steady=steady)
    project.run("--modelprof-report=report.html").assert_outcomes(passed=4, failed=2)
    page = tmp_path / "overview.html"
    page.write_text((project.root / "report.html").read_text().replace(
        "</body>", MEASURE_WIDTH + "</body>"))
    dom, console = chromium.load(page, tmp_path, "--window-size=1280,900")
    assert console == []
    found = re.search(r'data-width="([^"]*)"', dom)
    assert found is not None, "the measuring script did not run"
    seen = json.loads(html.unescape(found.group(1)))
    assert seen["window"] == 1280 and seen["overview"] is not None
    assert seen["overview"] <= 1280 and seen["page"] <= 1280, seen
