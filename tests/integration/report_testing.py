"""Helpers of the report integration tests: a regressing fake project and headless Chromium."""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest
from modelprof_testing import Project

EVIL_ID = "<script>alert(1)</script>"
CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
CHROMIUM_FLAGS = (
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--hide-scrollbars", "--enable-logging=stderr", "--v=0",
)

TESTS = f"""
import pytest

@pytest.mark.profile(model="fake:tiny", max_flops_delta=0.1)
def test_tiny():
    pass

@pytest.mark.parametrize("tag", [{EVIL_ID!r}])
@pytest.mark.profile(model="fake:other")
def test_other(tag):
    pass
"""


def regressing_project(project: Project) -> None:
    """Baselines for ``test_tiny`` and ``test_other``, then ``tiny`` grows by 30 %."""
    project.pytester.makepyfile(test_models=TESTS)
    project.set_costs(tiny={"flops": 1_000_000}, other={"flops": 2_000_000})
    project.run("--modelprof-update-baselines").assert_outcomes(passed=2)
    project.set_costs(
        tiny={"flops": 1_300_000, "layers": {"body": 1_000_000, "head&<b>": 300_000}},
        other={"flops": 2_000_000},
    )


@dataclass(frozen=True)
class Browser:
    """Headless Chromium: a DOM dump (after scripts ran), console messages and a screenshot."""

    executable: str

    def _run(self, page: Path, profile: Path, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [self.executable, *CHROMIUM_FLAGS, f"--user-data-dir={profile}", *args,
             page.resolve().as_uri()],
            capture_output=True, text=True, timeout=120, check=False,
        )

    def load(
        self, page: Path, workdir: Path, *window: str
    ) -> tuple[str, list[str]]:
        """(the DOM after scripts ran, the console messages); ``window``: extra flags, such as
        ``--window-size=1400,900`` (what scripts measure depends on it)."""
        done = self._run(page, workdir / "profile-dom", "--dump-dom", *window)
        assert done.returncode == 0, done.stderr[-2000:]
        console = [line for line in done.stderr.splitlines() if ":CONSOLE" in line]
        return done.stdout, console

    def screenshot(self, page: Path, png: Path, width: int = 1280, height: int = 2400) -> None:
        done = self._run(page, png.parent / "profile-shot", f"--screenshot={png}",
                         f"--window-size={width},{height}")
        assert done.returncode == 0 and png.is_file(), done.stderr[-2000:]


def browser() -> Browser:
    """The installed Chromium, or skip saying how to get one."""
    for name in CHROMIUM_NAMES:
        found = shutil.which(name)
        if found:
            return Browser(found)
    pytest.skip("no headless Chromium installed (apt-get install chromium; .ci/run installs it)")


#: A script that measures the overview as laid out and writes it into ``<body data-measure>``.
MEASURE_OVERVIEW = """
<script>
(() => {
  const tests = [...document.querySelectorAll("table.summary tbody tr")].filter(
    (tr) => tr.querySelector(".test"));
  const rows = tests.map((tr) => {
    const r = tr.getBoundingClientRect();
    const next = tr.nextElementSibling;
    const why = tr.querySelector(".why") || (next && next.querySelector(".why"));
    const test = tr.querySelector(".test");
    const w = why ? why.getBoundingClientRect() : null;
    return {
      css: tr.className, top: r.top, bottom: r.bottom, why: why ? why.textContent : null,
      whyWidth: w ? w.width : 0, whyBottom: w ? w.bottom : 0,
      testBreak: test ? getComputedStyle(test).wordBreak : null,
      testWrap: test ? getComputedStyle(test).overflowWrap : null,
    };
  });
  document.body.dataset.measure = JSON.stringify(
    {width: window.innerWidth, height: window.innerHeight, rows: rows});
})();
</script>
"""
