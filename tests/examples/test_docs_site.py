"""The documentation site: a README of at most 200 lines that links to it, a strict MkDocs build
(no broken link or anchor; the reference pages generated from the code at build time), and
every page rendered by headless Chromium.
"""

from __future__ import annotations

import functools
import http.server
import json
import os
import re
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
HOOK = ROOT / "docs" / "_hooks" / "reference.py"
CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")


def test_the_readme_is_short_and_keeps_the_quickstart_markers() -> None:
    text = README.read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 200
    # .ci/run takes the test command from under its marker (the same awk as there).
    done = subprocess.run(
        [
            "awk",
            "/<!-- quickstart:test -->/{found=1; next} found && /^```bash/{grab=1; next} "
            "grab && /^```/{exit} grab{print}",
            str(README),
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    assert done.stdout.strip() == 'pip install -e ".[dev]" && python -m pytest -n 2'
    assert "<!-- quickstart:profile -->" in text


def test_the_readmes_links_resolve() -> None:
    text = README.read_text(encoding="utf-8")
    for target in re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", text):
        if not target.startswith(("http://", "https://")):
            assert (ROOT / target).exists(), f"README links to a missing file: {target}"


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The site, built as the documentation says, with warnings as errors."""
    out = tmp_path_factory.mktemp("site")
    env = dict(
        os.environ,
        NO_MKDOCS_2_WARNING="1",
        PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
    )
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "mkdocs",
            "build",
            "--strict",
            "-f",
            str(ROOT / "mkdocs.yml"),
            "-d",
            str(out),
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    return out


def _text(page: Path) -> str:
    return re.sub(r"<[^>]+>", " ", page.read_text(encoding="utf-8"))


def test_the_site_builds_strictly_with_every_page(site: Path) -> None:
    pages = sorted(p.relative_to(site).as_posix() for p in site.rglob("index.html"))
    for page in (
        "getting-started",
        "gate",
        "reports-ci",
        "memory",
        "llm",
        "instructions",
        "history",
        "models",
        "conventions",
        "architecture",
        "reference/limits",
        "reference/cli",
        "reference/api",
    ):
        assert f"{page}/index.html" in pages
    # The pages load nothing from the network (no font service, no CDN): they work offline.
    for page in site.rglob("*.html"):
        external = re.findall(
            r'<(?:link|script)[^>]+(?:href|src)="(https?://[^"]+)"',
            page.read_text(encoding="utf-8"),
        )
        assert external == [], f"{page.relative_to(site)} loads {external}"
    # Every page under docs/ is in the navigation (a page without a nav entry joins "Guides").
    nav = (site / "index.html").read_text(encoding="utf-8")
    for md in (ROOT / "docs").rglob("*.md"):
        rel = md.relative_to(ROOT / "docs").with_suffix("").as_posix()
        if rel != "index":
            assert f'href="{rel}/"' in nav, f"docs/{rel}.md is in no navigation"


def test_the_references_are_generated_from_the_code(site: Path) -> None:
    from pytest_modelprof.baseline.metrics import BUILTIN_METRICS
    from pytest_modelprof.cli import COMMANDS, build_parser

    limits = _text(site / "reference" / "limits" / "index.html")
    for metric in BUILTIN_METRICS:
        assert metric.delta_key in limits
        assert metric.budget_key is None or metric.budget_key in limits
    assert "--modelprof-update-baselines" in limits
    cli = _text(site / "reference" / "cli" / "index.html")
    parser = build_parser()
    for command in COMMANDS:
        sub = parser._subparsers._group_actions[0].choices[command.name]  # type: ignore[union-attr]
        for action in sub._actions:
            for option in action.option_strings:
                assert option in cli, f"{command.name} {option} missing from the CLI reference"
    api = _text(site / "reference" / "api" / "index.html")
    for name in (
        "profile_model",
        "profile_llm",
        "estimate_memory",
        "register_model",
        "register_formula",
        "Modelprof",
        "pytest_modelprof_register_formulas",
    ):
        assert name in api


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture(scope="module")
def served(site: Path) -> Iterator[str]:
    """The site over HTTP on localhost (its search and scripts load as they would online)."""
    server = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), functools.partial(_Quiet, directory=str(site))
    )
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


HARNESS = """<!doctype html><meta charset="utf-8"><title>pages</title>
<pre id="result">pending</pre>
<script>
const pages = %s;
const out = {};
const frames = {};
let left = pages.length;
function collect() {
  for (const page of pages) {
    const doc = frames[page].contentDocument;
    const article = doc.querySelector("article");
    out[page] = {
      h1: (doc.querySelector("article h1") || {}).textContent || "",
      text: article ? article.innerText.length : 0,
      nav: doc.querySelectorAll("nav.md-nav--primary a").length,
      // The theme's script marks the body with the colour scheme's media query.
      script: doc.body.hasAttribute("data-md-color-media"),
      overflow: doc.documentElement.scrollWidth > 1280,
    };
  }
  document.getElementById("result").textContent = JSON.stringify(out);
}
for (const page of pages) {
  const frame = document.createElement("iframe");
  frame.style.width = "1280px"; frame.style.height = "800px";
  frame.onload = () => { if (--left === 0) setTimeout(collect, 3000); };
  frame.src = page;
  frames[page] = frame;
  document.body.appendChild(frame);
}
</script>
"""


def _chromium() -> str:
    for name in CHROMIUM_NAMES:
        found = shutil.which(name)
        if found:
            return found
    pytest.skip("no headless Chromium installed (apt-get install chromium; .ci/run installs it)")


def test_every_page_renders_in_chromium(site: Path, served: str, tmp_path: Path) -> None:
    browser = _chromium()
    pages = sorted(
        "/" + p.relative_to(site).parent.as_posix() + "/"
        for p in site.rglob("index.html")
        if "search" not in p.parts
    )
    pages = [p.replace("/./", "/") for p in pages]
    (site / "_harness.html").write_text(HARNESS % json.dumps(pages))
    done = subprocess.run(
        [
            browser,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--enable-logging=stderr",
            "--v=0",
            f"--user-data-dir={tmp_path / 'profile'}",
            "--virtual-time-budget=30000",
            "--window-size=1400,900",
            "--dump-dom",
            f"{served}/_harness.html",
        ],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    found = re.search(r'<pre id="result">(.*?)</pre>', done.stdout, re.S)
    assert found and found.group(1) != "pending", done.stdout[-2000:]
    result = json.loads(found.group(1).replace("&quot;", '"'))
    assert sorted(result) == pages
    for page, seen in result.items():
        assert seen["h1"].strip(), f"{page}: no heading rendered"
        assert seen["text"] > 200, f"{page}: {seen['text']} characters of content"
        assert seen["nav"] >= 13, f"{page}: the navigation has {seen['nav']} links"
        assert seen["script"], f"{page}: the theme's scripts did not run"
        assert not seen["overflow"], f"{page}: wider than a 1,280 px window"
    errors = [
        line
        for line in done.stderr.splitlines()
        if ":CONSOLE" in line and ("Uncaught" in line or "Error" in line)
    ]
    assert errors == []


def test_a_page_without_a_nav_entry_joins_the_guides(tmp_path: Path) -> None:
    """Others add pages under docs/ without editing mkdocs.yml: the hook lists them."""
    import importlib.util
    from types import SimpleNamespace

    spec = importlib.util.spec_from_file_location("reference_hook", HOOK)
    assert spec and spec.loader
    hook = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(hook)
    (tmp_path / "index.md").write_text("# Home\n")
    (tmp_path / "gate.md").write_text("# The gate\n")
    (tmp_path / "gpu-prediction.md").write_text("Intro.\n\n# Predicting GPU time\n")
    (tmp_path / "_hooks").mkdir()
    (tmp_path / "_hooks" / "notes.md").write_text("# not a page\n")
    config = SimpleNamespace(
        nav=[{"Home": "index.md"}, {"Guides": [{"The gate": "gate.md"}]}],
        docs_dir=str(tmp_path),
    )
    hook.on_config(config)
    assert config.nav[1] == {
        "Guides": [{"The gate": "gate.md"}, {"Predicting GPU time": "gpu-prediction.md"}]
    }
