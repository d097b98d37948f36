"""docs/architecture.md's picture of the layers is the import graph as it is now, never stale."""

from __future__ import annotations

import difflib

from draw_layers import COMMAND, DOC, _drawn_arrows, current_picture, layers, loops, with_picture


def test_the_picture_in_the_doc_is_the_import_graph() -> None:
    doc = DOC.read_text(encoding="utf-8")
    drawn = with_picture(doc, current_picture())
    diff = "\n".join(
        difflib.unified_diff(doc.splitlines(), drawn.splitlines(), "doc", "imports", lineterm="")
    )
    assert drawn == doc, f"the layers in {DOC.name} are stale; redraw them with: {COMMAND}\n{diff}"


def test_layers_loops_and_arrows_of_a_small_graph() -> None:
    # cli -> gate -> baseline -> errors, cli -> baseline (implied), report <-> gate (a loop).
    graph = {
        "cli/": {"gate/", "baseline/"},
        "gate/": {"baseline/", "report/"},
        "report/": {"gate/"},
        "baseline/": {"errors.py"},
        "errors.py": set(),
    }
    assert layers(graph) == {"errors.py": 0, "baseline/": 1, "gate/": 2, "report/": 2, "cli/": 3}
    assert loops(graph) == [["gate/", "report/"]]
    arrows = _drawn_arrows(graph)
    assert ("cli/", "baseline/") not in arrows  # said by cli/ -> gate/ -> baseline/
    assert {("gate/", "report/"), ("report/", "gate/"), ("cli/", "gate/")} <= set(arrows)
    assert loops({"a": {"b"}, "b": set()}) == []


def test_the_doc_keeps_its_text_around_the_picture() -> None:
    from draw_layers import BEGIN, END

    doc = f"# Architecture\n\nbefore\n{BEGIN}\nold\n{END}\nafter\n"
    assert with_picture(doc, "new") == f"# Architecture\n\nbefore\n{BEGIN}\nnew\n{END}\nafter\n"
