"""Markdown, the job summary and GitHub annotations: compact, escaped, regressions first."""

from __future__ import annotations

from pathlib import Path

from report_samples import EVIL, hostile_results, no_live_markdown, outside_code_spans

from pytest_modelprof.report.github import (
    annotation_lines,
    append_step_summary,
    escape_data,
    escape_property,
)
from pytest_modelprof.report.markdown import code, render_markdown, render_step_summary
from pytest_modelprof.report.view import build_view
from pytest_modelprof.results.document import RunResults


def test_code_spans_survive_any_text() -> None:
    assert code("a|b") == "`a\\|b`"
    assert code("x`y") == "``x`y``"
    assert code("`x") == "`` `x ``"
    assert code("two\nlines") == "`two lines`"


def test_step_summary_is_compact_and_ordered(results: RunResults) -> None:
    text = render_step_summary(build_view(results))
    lines = text.splitlines()
    assert lines[0] == "### modelprof cost report"
    rows = [line for line in lines if line.startswith("| ")][2:]
    assert [r.split(" | ")[0] for r in rows] == ["| \u274c regressed", "| \U0001f195 new baseline",
                                                 "| \u2705 ok"]
    assert f"`tests/test_x.py::test_x[{EVIL}]`" in rows[0]  # in a code span: never HTML
    assert "1.4 MFLOPs (+40.0 %)" in rows[0]
    bullet = next(line for line in lines if line.startswith("- "))
    assert bullet.endswith(
        "FLOPs: 1 MFLOPs \u2192 1.4 MFLOPs (+40.0 %, limit +10.0 %); "
        "MACs: 500 KMACs \u2192 700 KMACs (+40.0 %, limit exact); "
        "params: 10 K \u2192 14 K (+40.0 %, limit exact); and 1 more"
    )
    assert "(https://github.com/o/r/actions/runs/7#artifacts)" in text


def test_full_markdown_has_each_test(results: RunResults) -> None:
    text = render_markdown(build_view(results))
    assert text.startswith("# modelprof cost report\n")
    assert text.count("\n### ") == 3
    assert "| FLOPs | 1 MFLOPs | 1.4 MFLOPs | +400 KFLOPs (+40.0 %) | +10.0 % | **regressed** |" \
        in text
    assert "- `head` (`Conv2d`): +300 KFLOPs" in text


def test_append_step_summary(tmp_path: Path) -> None:
    path = tmp_path / "summary.md"
    path.write_text("earlier step\n")
    append_step_summary(path, "ours")
    assert path.read_text() == "earlier step\nours\n"


def test_escaping_follows_githubs_rules() -> None:
    assert escape_data("12.3 %\r\nnext") == "12.3 %25%0D%0Anext"
    assert escape_property("a:b,c%") == "a%3Ab%2Cc%25"


def test_annotations_carry_no_control_character() -> None:
    # A terminal escape or a bidi override in a test id is shown as its escape in the CI log.
    assert escape_data("t[\x1b[31mred\x07\u202e]\r\n") == "t[\\x1b[31mred\\x07\\u202e]%0D%0A"
    assert escape_property("a\x1b:b") == "a\\x1b%3Ab"


def test_annotations_point_at_the_test(results: RunResults, tmp_path: Path) -> None:
    lines = annotation_lines(results, rootdir=tmp_path / "repo" / "sub",
                             workspace=str(tmp_path / "repo"))
    assert lines == [
        "::error file=sub/tests/test_x.py,line=12,title=modelprof regression::"
        f"tests/test_x.py::test_x[{EVIL}]: "
        "FLOPs: 1 MFLOPs \u2192 1.4 MFLOPs (+40.0 %25, limit +10.0 %25)%0A"
        "MACs: 500 KMACs \u2192 700 KMACs (+40.0 %25, limit exact)%0A"
        "params: 10 K \u2192 14 K (+40.0 %25, limit exact)%0A"
        "traffic: 180 KB \u2192 230 KB (+27.8 %25, limit exact)"
    ]
    # Without a workspace the path stays relative to the rootdir.
    assert annotation_lines(results, rootdir=tmp_path)[0].startswith(
        "::error file=tests/test_x.py,line=12,"
    )


def test_reasons_and_labels_are_escaped_in_every_markdown() -> None:
    view = build_view(hostile_results())
    for text in (render_markdown(view), render_step_summary(view)):
        # Code spans (ids, names) are inert; everything outside them must be escaped.
        no_live_markdown(outside_code_spans(text))
        assert "\\*\\*APPROVED\\*\\*" in text and "@\u200borg/team" in text
    # The metric table's label column, too (a table row is one line: its pipes are escaped).
    row = next(line for line in render_markdown(view).splitlines()
               if line.startswith("| ") and "\\*\\*APPROVED" in line.split(" | ")[0])
    assert row.count(" | ") == 5


def test_the_report_link_is_http_and_cannot_end_early(results: RunResults) -> None:
    def link_lines(url: str) -> list[str]:
        run = results.run.model_copy(update={"artifact_url": url})
        text = render_markdown(build_view(results.model_copy(update={"run": run})))
        return [line for line in text.splitlines() if "Full HTML report" in line]

    assert link_lines("javascript:alert(1)") == []
    assert link_lines("https://o.example/a)![i](http://evil.example/p.png)") == [
        "[Full HTML report](https://o.example/a%29!%5Bi%5D%28http://evil.example/p.png%29)"]


def test_the_markdown_report_and_the_summary_are_capped(results: RunResults) -> None:
    long_id = "tests/test_x.py::test_long[" + "y" * 100_000 + "]"
    test = results.tests[0].model_copy(update={"nodeid": long_id})
    view = build_view(results.model_copy(update={"tests": [test, *results.tests[1:]]}))
    for render in (render_markdown, render_step_summary):
        text = render(view)
        # One code span holds at most 300 characters of the id, both of its ends kept.
        assert "y" * 300 not in text and "`tests/test_x.py::test_long[yyy" in text
        assert "yyy]`" in text
        assert len(text) < 10_000, len(text)
    # A report larger than its cap is cut at a line end, saying where the rest is.
    full = render_markdown(view)
    cut = render_markdown(view, limit=1_000)
    assert len(cut) <= 1_000 and full.startswith(cut.rsplit("\n\n*Cut to", 1)[0])
    assert cut.endswith("*Cut to 1,000 characters (3 profiles, regressions first): the rest is "
                        "in the HTML and JSON reports.*\n")
    summary = render_step_summary(view, limit=500)
    assert len(summary) <= 500 and summary.endswith("the rest is in the HTML report.*\n")
