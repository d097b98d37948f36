"""The HTML renderer: one self-contained file (inline CSS, SVG and script) from Jinja templates.

The templates live at the top of the repository (``templates/``) and ship inside the wheel as
``pytest_modelprof/templates``; :func:`template_dir` finds either. Jinja runs with
``autoescape=True`` (``select_autoescape`` would miss ``.html.j2``) and ``StrictUndefined``, and
the templates only lay out the :class:`~pytest_modelprof.report.view.ReportView`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Final

import jinja2

from pytest_modelprof.errors import ReportError
from pytest_modelprof.report.view import ReportView

__all__ = ["environment", "render_html"]

TEMPLATE: Final = "report.html.j2"


def template_dir() -> Path:
    """The templates: inside the installed package (wheel), else the checkout's ``templates/``."""
    package = Path(__file__).resolve().parent.parent
    candidates = (package / "templates", package.parent / "templates")
    for candidate in candidates:
        if (candidate / TEMPLATE).is_file():
            return candidate
    tried = ", ".join(str(c) for c in candidates)
    raise ReportError(f"cannot find the report templates ({TEMPLATE}); looked in {tried}")


def environment(directory: Path | None = None) -> jinja2.Environment:
    """The Jinja environment every HTML report renders with."""
    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(directory or template_dir())),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )


def render_html(view: ReportView) -> str:
    """The report as one HTML document."""
    return environment().get_template(TEMPLATE).render(view=view)
