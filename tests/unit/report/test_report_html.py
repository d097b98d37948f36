"""The HTML renderer: self-contained, escaped, strict templates that ship inside the wheel."""

from __future__ import annotations

import html.parser
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import jinja2
import pytest
from report_samples import EVIL, NASTY_MODULE

from pytest_modelprof.report.html import TEMPLATE, environment, render_html, template_dir
from pytest_modelprof.report.view import build_view
from pytest_modelprof.results.document import RunResults

REPO = Path(__file__).resolve().parents[3]


class _Collect(html.parser.HTMLParser):
    """Every start tag with its attributes, and the text of <script> elements."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.scripts: list[str] = []
        self._in_script = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))
        self._in_script = tag == "script"

    def handle_endtag(self, tag: str) -> None:
        self._in_script = False

    def handle_data(self, data: str) -> None:
        if self._in_script:
            self.scripts.append(data)


def test_everything_user_supplied_is_escaped(results: RunResults) -> None:
    page = render_html(build_view(results))
    assert EVIL not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert NASTY_MODULE not in page and "blocks.0.&amp;&#34;&#39;&lt;&gt;" in page
    parsed = _Collect()
    parsed.feed(page)
    assert sum(1 for tag, _ in parsed.tags if tag == "script") == 1  # ours, nothing injected
    assert "alert" not in "".join(parsed.scripts)


@pytest.mark.parametrize("url", ["javascript:alert(1)", "JavaScript:alert(1)//https://x",
                                 "data:text/html,<b>x</b>", "//evil.example/x", "ftp://x/y"])
def test_only_http_links_are_links(results: RunResults, url: str) -> None:
    """A results file is written by whoever ran the gate: its URLs are links only if http(s)."""
    run = results.run.model_copy(update={"run_url": url, "repository_url": url})
    page = render_html(build_view(results.model_copy(update={"run": run})))
    parsed = _Collect()
    parsed.feed(page)
    hrefs = [attrs.get("href") or "" for _, attrs in parsed.tags]
    assert all(h.startswith("#") for h in hrefs if h), hrefs
    assert "alert(1)" in page or "&lt;b&gt;" in page or "evil.example" in page or "ftp:" in page


def test_page_is_self_contained(results: RunResults) -> None:
    page = render_html(build_view(results))
    parsed = _Collect()
    parsed.feed(page)
    for tag, attrs in parsed.tags:
        assert "src" not in attrs, tag  # no external script, image or frame
        if tag == "link":
            pytest.fail(f"external stylesheet {attrs}")
        href = attrs.get("href") or ""
        assert not href or href.startswith(("#", "https://github.com/o/r")), href
    assert page.count("<svg") == 9  # three charts for each of the three profiles
    assert "<style>" in page and page.rstrip().endswith("</html>")


def test_environment_is_strict_and_escaping(tmp_path: Path) -> None:
    env = environment()
    assert env.autoescape is True and env.undefined is jinja2.StrictUndefined
    (tmp_path / "t.html.j2").write_text("{{ missing }}")
    with pytest.raises(jinja2.UndefinedError):
        environment(tmp_path).get_template("t.html.j2").render()


def test_templates_found_in_the_checkout() -> None:
    assert template_dir() == REPO / "templates"
    assert (template_dir() / TEMPLATE).is_file()


@pytest.mark.slow
def test_templates_render_from_an_installed_wheel(tmp_path: Path, results: RunResults) -> None:
    """A non-editable install renders from the templates packed into the wheel."""
    wheels, target = tmp_path / "wheels", tmp_path / "site"
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "--no-input", "-q"]
    subprocess.run([*pip, "wheel", "--no-deps", "--no-build-isolation", "-w", str(wheels),
                    str(REPO)], check=True, timeout=300)
    (wheel,) = wheels.glob("pytest_modelprof-*.whl")
    subprocess.run([*pip, "install", "--no-deps", "--no-compile", "--target", str(target),
                    str(wheel)], check=True, timeout=300)
    (tmp_path / "results.json").write_text(results.to_json())
    script = textwrap.dedent(
        """
        import sys
        import pytest_modelprof
        from pytest_modelprof.report.html import render_html, template_dir
        from pytest_modelprof.report.view import build_view
        from pytest_modelprof.results.document import RunResults

        results = RunResults.from_json(open(sys.argv[1]).read())
        print(pytest_modelprof.__file__)
        print(template_dir())
        print(len(render_html(build_view(results))))
        """
    )
    env = {**os.environ, "PYTHONPATH": str(target)}
    done = subprocess.run([sys.executable, "-c", script, str(tmp_path / "results.json")],
                          env=env, cwd=tmp_path, capture_output=True, text=True, timeout=120,
                          check=False)
    assert done.returncode == 0, done.stderr
    package, templates, size = done.stdout.split()
    assert Path(package).is_relative_to(target)
    assert Path(templates) == target / "pytest_modelprof" / "templates"
    assert int(size) > 10_000
