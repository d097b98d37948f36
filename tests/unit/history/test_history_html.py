"""``history --html`` in headless Chromium, and ``--markdown``: charts, annotations, no overflow."""

from __future__ import annotations

import html
import json
import re
import sys
from pathlib import Path
from typing import Any

import pytest
from history_repo import NETWORK, OTHER, GitRepo, scenario

from pytest_modelprof.cli import main

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "integration"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "report"))
from report_testing import browser  # noqa: E402

#: Measures the page as laid out and writes it into ``<body data-measure>``: the page's and
#: each scroll box's overflow, and every SVG text's box against its chart's view box.
MEASURE = """
<script>
(() => {
  const charts = [...document.querySelectorAll("figure.chart svg")].map((svg) => {
    const vb = svg.viewBox.baseVal;
    const outside = [...svg.querySelectorAll("text")].map((t) => {
      const b = t.getBBox();
      return {text: t.textContent, x: b.x, y: b.y, right: b.x + b.width, bottom: b.y + b.height};
    }).filter((b) => b.x < -0.5 || b.y < -0.5 || b.right > vb.width + 0.5
                     || b.bottom > vb.height + 0.5);
    return {title: svg.getAttribute("aria-label"), width: vb.width, outside: outside,
            lines: svg.querySelectorAll("polyline").length,
            points: svg.querySelectorAll("circle").length};
  });
  const boxes = [...document.querySelectorAll(".scroll")].map(
    (d) => d.scrollWidth - d.clientWidth);
  document.body.dataset.measure = JSON.stringify({
    page: document.documentElement.scrollWidth - window.innerWidth, boxes: boxes,
    charts: charts});
})();
</script>
"""


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> GitRepo:
    return scenario(tmp_path_factory.mktemp("history-html") / "repo")


def test_history_html_renders_in_chromium(repo: GitRepo, tmp_path: Path) -> None:
    chromium = browser()
    page = tmp_path / "history.html"
    assert main(["history", str(repo.root / "baselines"), "--html", str(page)]) == 0
    text = page.read_text()
    assert "http://" not in text.replace("http://www.w3.org/2000/svg", "")  # no network
    assert "https://" not in text
    measured = tmp_path / "measured.html"
    measured.write_text(text.replace("</body>", MEASURE + "</body>"))
    dom, console = chromium.load(measured, tmp_path, "--window-size=1400,900")
    assert console == []
    assert '<html lang="en" data-ready="true">' in dom
    found = re.search(r'data-measure="([^"]*)"', dom)
    assert found is not None, "the measuring script did not run"
    measure: dict[str, Any] = json.loads(html.unescape(found.group(1)))
    # Two tests x four default metrics (flops, params, traffic, peak activations), each a line.
    assert len(measure["charts"]) == 8
    assert all(c["lines"] == 1 and c["points"] >= 2 for c in measure["charts"])
    assert measure["page"] <= 0, "the page scrolls sideways"
    assert all(b <= 0 for b in measure["boxes"]), measure["boxes"]
    assert [c for c in measure["charts"] if c["outside"]] == []
    # The annotations: the step's commit, date, subject, delta and environment change.
    widen = repo.commits[7][:8]
    assert f"{widen} +100.0 %" in dom  # the visible label of the largest step
    assert (
        f"<title>{widen} 2026-11-02 widen network: 2.2 MFLOPs (1.1 MFLOPs \u2192 "
        f"2.2 MFLOPs, +100.0 %)</title>"
    ) in dom
    assert "torch 2.14.1 \u2192 2.15.0" in dom  # tooltip of the environment marker
    assert re.search(r'class="ridge-label"><title>[^<]*</title>2\.15\.0</text>', dom)
    # The largest-steps table and each test's section.
    text = dom.replace("<wbr>", "")  # test ids wrap only at / :: [ (report.view.breakable)
    assert text.index("Largest steps") < text.index(NETWORK)
    assert f'<td class="test">{OTHER}</td>' in text
    assert "renamed from" in dom and "tests/test_models.py::test_net<" in dom
    png = tmp_path / "history.png"
    chromium.screenshot(measured, png, width=1400, height=2400)
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_history_markdown(repo: GitRepo, tmp_path: Path) -> None:
    md = tmp_path / "history.md"
    assert (
        main(["history", str(repo.root / "baselines"), "--markdown", str(md), "--metric", "flops"])
        == 0
    )
    text = md.read_text()
    widen = repo.commits[7][:8]
    assert text.startswith("# Cost history\n")
    assert (
        f"| `{NETWORK}` | FLOPs | {widen} | 2026-11-02 | 1.1 MFLOPs | 2.2 MFLOPs | "
        f"+1.1 MFLOPs | +100.0 % |  | widen network |"
    ) in text
    assert f"## `{OTHER}`" in text
    assert "renamed from: tests/test\\_models.py::test\\_net" in text


def _grown(root: Path, test: str, subject: str) -> GitRepo:
    """A repository where ``test``'s FLOPs double in a commit titled ``subject``."""
    from history_repo import baseline

    repo = GitRepo.create(root / "repo")
    repo.write(test, baseline(test, flops=10))
    repo.commit("add")
    repo.write(test, baseline(test, flops=20))
    repo.commit(subject)
    return repo


def test_commit_subjects_and_test_ids_stay_text(tmp_path: Path) -> None:
    repo = _grown(tmp_path, "tests/test_x.py::test_y[<b>]", "<script>alert(1)</script> | `x`")
    page, md = tmp_path / "h.html", tmp_path / "h.md"
    assert (
        main(["history", str(repo.root / "baselines"), "--html", str(page), "--markdown", str(md)])
        == 0
    )
    text = page.read_text()
    assert "<script>alert" not in text and "&lt;script&gt;alert(1)&lt;/script&gt;" in text
    assert "<b>" not in text.replace("<wbr>", "")
    markdown = md.read_text()
    assert "\\<script\\>alert(1)\\</script\\> \\| \\`x\\`" in markdown


def test_markdown_subjects_are_inert(tmp_path: Path) -> None:
    """A merged pull request's subject lands in the job summary: nothing of it may be live."""
    from report_samples import HOSTILE, no_live_markdown, outside_code_spans

    subject = f"{HOSTILE} *bold* @octocat <b>x</b>"
    repo = _grown(tmp_path, "tests/test_x.py::test_y[a*b*c]", subject)
    md = tmp_path / "h.md"
    assert main(["history", str(repo.root / "baselines"), "--markdown", str(md)]) == 0
    live = outside_code_spans(md.read_text())
    no_live_markdown(live)
    assert "*bold*" not in live and "@octocat" not in live and "<b>" not in live
    assert "a*b*c" not in live  # a test id is a code span, as in the gate's report
    assert "\\*bold\\* @\u200boctocat" in live  # escaped, still readable
