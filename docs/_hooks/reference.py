"""MkDocs hook: the generated reference pages, and a nav entry for every page that has none.

The limits and metrics page is written from the metric table, the pytest options from the
plugin's own option wiring, and the CLI page from the argparse parser, at every build, so they
cannot go stale. A Markdown page added under ``docs/`` without a ``nav`` entry is appended to
the "Guides" section (its title from its first heading), so a new page needs no edit here.
"""

from __future__ import annotations

import argparse
import os
import re
from pathlib import Path
from typing import Any

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.structure.files import File, Files

GENERATED = {
    "reference/limits.md": "limits_page",
    "reference/cli.md": "cli_page",
}
GUIDES = "Guides"


def _cell(text: object) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _code(text: object) -> str:
    return f"`{text}`" if text else ""


def limits_page() -> str:
    """Every metric of the table with its limits and default, the settings, and every pytest
    option of the plugin with its ini key."""
    from pytest_modelprof._options import OPTIONS
    from pytest_modelprof.baseline.metrics import BUILTIN_METRICS
    from pytest_modelprof.gate.limits import SETTINGS
    from pytest_modelprof.gate.settings import ini_key

    lines = [
        "# Limits and metrics",
        "",
        "Generated from the metric table (`pytest_modelprof.baseline.metrics`) and the plugin's "
        "options at every documentation build. A limit is `NAME=VALUE` everywhere: a marker "
        "keyword (`@pytest.mark.profile(max_flops_delta=0.05)`), a command-line default for "
        "every test (`--modelprof-limit max_flops_delta=0.05`, repeatable) and a line of the "
        "`modelprof_limits` ini list; precedence is marker > command line > ini > built-in. "
        "How to write them: [Writing limits](../limits.md); how they are judged: "
        "[The gate and its limits](../gate.md).",
        "",
        "## Metrics",
        "",
        "| metric (label) | worse | relative limit (default) | budget | growth limit | "
        "measured by | depends on |",
        "|---|---|---|---|---|---|---|",
    ]
    for m in BUILTIN_METRICS:
        depends = ", ".join(
            word
            for word, flag in (("kernels", m.kernel_dependent), ("CPU", m.cpu_dependent))
            if flag
        )
        lines.append(
            f"| `{m.name}` ({_cell(m.label)}) | {'up' if m.direction == 'lower' else 'down'}"
            f" | `{m.delta_key}` ({_cell(m.default_delta)}) | {_code(m.budget_key)} | "
            f"{_code(m.growth_key)} | {m.collector if m.collector else 'the capture'} | "
            f"{depends} |"
        )
    lines += [
        "",
        "*Worse*: the direction a change fails in. *Default*: what an unset relative "
        "limit means (`exact`: any change in the worse direction fails; `ignored`: not judged "
        "unless set). *Measured by*: the capture (always), or a collector that runs only for a "
        "test that sets one of its limits. *Depends on*: a change of torch (kernels) or CPU "
        "warns for that metric instead of failing until the baseline is re-recorded.",
        "",
        "## Settings",
        "",
        "Marker keywords that are not limits: "
        + ", ".join(f"`{name}`" for name in SETTINGS)
        + ". Those a whole run may set have an option below.",
        "",
        "## pytest options and ini keys",
        "",
        "| option | ini key | what |",
        "|---|---|---|",
    ]
    helps = {names[0]: text for names, text in _plugin_options()}
    for option in OPTIONS:
        key = _code(ini_key(option.ini)) if option.ini is not None else ""
        lines.append(f"| `{option.flag}` | {key} | {_cell(helps[option.flag])} |")
    return "\n".join(lines) + "\n"


class _Recorder:
    """Stands in for pytest's parser and records the options the plugin adds."""

    def __init__(self) -> None:
        self.options: list[tuple[tuple[str, ...], str]] = []

    def getgroup(self, *args: Any, **kwargs: Any) -> _Recorder:
        return self

    def addoption(self, *names: str, **kwargs: Any) -> None:
        self.options.append((names, str(kwargs.get("help", "")).replace("%%", "%")))

    def addini(self, *args: Any, **kwargs: Any) -> None:
        pass


def _plugin_options() -> list[tuple[tuple[str, ...], str]]:
    from pytest_modelprof._options import add_options

    recorder = _Recorder()
    add_options(recorder)  # type: ignore[arg-type]
    return recorder.options


def _option_rows(parser: argparse.ArgumentParser) -> list[str]:
    rows = ["| option | what |", "|---|---|"]
    for action in parser._actions:  # argparse has no public list of its actions
        if isinstance(action, argparse._HelpAction):
            continue
        if action.option_strings:
            metavar = "" if action.nargs == 0 else f" {action.metavar or action.dest.upper()}"
            name = ", ".join(f"`{o}{metavar}`" for o in action.option_strings)
        else:
            name = f"`{action.metavar or action.dest}`"
        text = (action.help or "") % {"default": action.default, "prog": parser.prog}
        if action.choices and "{" not in text:
            text += f" (one of: {', '.join(map(str, action.choices))})"
        rows.append(f"| {name} | {_cell(text)} |")
    return rows


def _usage(parser: argparse.ArgumentParser) -> str:
    """The usage lines as ``--help`` prints them at 90 columns (the same on every machine)."""
    saved = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = "90"
    try:
        return parser.format_usage().rstrip()
    finally:
        if saved is None:
            del os.environ["COLUMNS"]
        else:
            os.environ["COLUMNS"] = saved


def cli_page() -> str:
    """Every ``modelprof`` command: its summary, usage, options and examples."""
    from pytest_modelprof.cli import COMMANDS, build_parser

    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    lines = [
        "# The `modelprof` command",
        "",
        "Generated from the command's argparse parser at every documentation build: the same "
        "text as `modelprof COMMAND --help`. The test suite runs every example below.",
        "",
        "| command | what it does |",
        "|---|---|",
    ]
    lines += [f"| [`{c.name}`](#{c.name}) | {_cell(c.summary)} |" for c in COMMANDS]
    lines += ["", *_convention()]
    for command in COMMANDS:
        p = sub.choices[command.name]
        usage = _usage(p)
        lines += [
            "",
            f"## {command.name}",
            "",
            _cell(command.description or command.summary).strip(),
            "",
            "```text",
            usage,
            "```",
            "",
            *_option_rows(p),
            "",
            "Examples:",
            "",
            "```bash",
            *(line.removeprefix("  ") for line in command.examples.splitlines()),
            "```",
        ]
    return "\n".join(lines) + "\n"


def _convention() -> list[str]:
    """The options every command spells alike, and the machine table ``--machine`` names."""
    from pytest_modelprof.machines import MACHINES
    from pytest_modelprof.units import format_bytes

    lines = [
        "Every command spells an option the same way: `--json` prints the JSON document to "
        "stdout, `--output FILE` (`-o`) writes a file, `--machine NAME` names the hardware "
        "(`profile`, `partition`, `llm`, `memory`) with `--precision` separate, `--capacity` "
        "is a memory size, and `--optimizer sgd` is torch's plain SGD (`sgd-momentum`: momentum "
        "0.9). A mistyped option gets \"did you mean\" and the command's usage.",
        "",
        "| `--machine` | hardware | fp32 | tf32 | fp16/bf16 | bandwidth | memory |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, m in MACHINES.items():
        peaks = " | ".join(f"{v / 1e12:g} TFLOP/s" for v in (m.fp32, m.tf32_tensor, m.fp16_tensor))
        lines.append(f"| `{name}` | {m.label} | {peaks} | {m.bandwidth / 1e9:g} GB/s | "
                     f"{format_bytes(m.memory_bytes)} |")
    return lines


def on_files(files: Files, config: MkDocsConfig) -> Files:
    """Add the generated pages (in memory: nothing is written to docs/)."""
    for uri, builder in GENERATED.items():
        files.append(File.generated(config, uri, content=globals()[builder]()))
    return files


def _title(path: Path) -> str:
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("# "):
            return line[2:].strip()
    return path.stem.replace("-", " ").capitalize()


def _mentioned(nav: Any) -> set[str]:
    found: set[str] = set()
    if isinstance(nav, str):
        found.add(nav)
    elif isinstance(nav, dict):
        for value in nav.values():
            found |= _mentioned(value)
    elif isinstance(nav, list):
        for item in nav:
            found |= _mentioned(item)
    return found


def on_config(config: MkDocsConfig) -> MkDocsConfig:
    """Pages under docs/ that the nav does not name join its "Guides" section."""
    nav = config.nav or []
    named = _mentioned(nav)
    docs = Path(config.docs_dir)
    extra = [
        {_title(p): p.relative_to(docs).as_posix()}
        for p in sorted(docs.rglob("*.md"))
        if p.relative_to(docs).as_posix() not in named
        and not re.match(r"_", p.relative_to(docs).parts[0])
    ]
    if extra:
        section = next((s for s in nav if isinstance(s, dict) and GUIDES in s), None)
        if section is None:
            nav.append({GUIDES: extra})
        else:
            section[GUIDES] = [*section[GUIDES], *extra]
    return config
