"""The picture of the package's layers in docs/architecture.md, drawn from the import graph.

One node per folder (``capture/``) or top-level module (``schema.py``); an arrow means "imports"
(at run time, lazy imports inside functions included: the graph ``test_layout.py`` walks).
Regenerate the picture after changing imports with::

    python tests/unit/architecture/draw_layers.py

``test_architecture_picture.py`` fails while the doc's picture differs from the code's.
"""

from __future__ import annotations

import sys

from test_layout import PACKAGE, _graph  # the walker the layout test checks cycles with

DOC = PACKAGE.parent / "docs" / "architecture.md"
COMMAND = "python tests/unit/architecture/draw_layers.py"
BEGIN = f"<!-- layers: drawn by `{COMMAND}` from the import graph; do not edit by hand -->"
END = "<!-- layers: end -->"

Graph = dict[str, set[str]]


def node_of(module: str) -> str:
    """``pytest_modelprof.capture.tracer`` -> ``capture/``; ``pytest_modelprof.schema`` ->
    ``schema.py``; the package itself -> ``__init__.py``."""
    parts = module.split(".")
    if len(parts) == 1:
        return "__init__.py"
    return f"{parts[1]}/" if (PACKAGE / parts[1]).is_dir() else f"{parts[1]}.py"


def folder_graph(modules: Graph) -> Graph:
    """The module graph with each folder's modules merged into one node."""
    out: Graph = {}
    for module, imports in modules.items():
        node = node_of(module)
        out.setdefault(node, set()).update(node_of(m) for m in imports)
        out[node].discard(node)
    return out


def _reach(graph: Graph) -> Graph:
    """Every node each node reaches by one or more arrows."""
    out: Graph = {}
    for start in graph:
        seen: set[str] = set()
        todo = list(graph[start])
        while todo:
            node = todo.pop()
            if node not in seen:
                seen.add(node)
                todo.extend(graph[node])
        out[start] = seen
    return out


def loops(graph: Graph) -> list[list[str]]:
    """Groups of nodes that import each other, directly or through others."""
    reach = _reach(graph)
    groups = {frozenset({n} | {m for m in reach[n] if n in reach[m]}) for n in graph}
    return sorted(sorted(g) for g in groups if len(g) > 1)


def layers(graph: Graph) -> dict[str, int]:
    """Layer 0 imports nothing of ours; each node sits one above the highest it imports
    (the members of a loop share a layer)."""
    reach = _reach(graph)
    same = {n: {n} | {m for m in reach[n] if n in reach[m]} for n in graph}
    below = {n: reach[n] - same[n] for n in graph}
    out: dict[str, int] = {}
    for node in sorted(graph, key=lambda n: len(below[n])):  # what a node reaches comes first
        out[node] = 1 + max((out[m] for m in below[node]), default=-1)
    return out


def _drawn_arrows(graph: Graph) -> list[tuple[str, str]]:
    """The arrows a reader needs: an import implied by a longer path of imports is left out
    (``cli/ -> gate/ -> baseline/`` hides ``cli/ -> baseline/``), except inside a loop."""
    reach = _reach(graph)
    out: list[tuple[str, str]] = []
    for a in sorted(graph):
        for b in sorted(graph[a]):
            in_loop = a in reach[b]
            implied = any(b in reach[c] and a not in reach[c] for c in graph[a] if c != b)
            if in_loop or not implied:
                out.append((a, b))
    return out


def _id(node: str) -> str:
    return node.replace("/", "").replace(".py", "_py").replace("__init___py", "package_init")


def draw(graph: Graph) -> str:
    """The Markdown between the markers: a Mermaid picture and the full table it abbreviates."""
    level = layers(graph)
    order = sorted(graph, key=lambda n: (-level[n], n))
    reach = _reach(graph)
    lines = ["```mermaid", "flowchart TD"]
    lines += [f'    {_id(n)}["{n}"]' for n in order]
    for a, b in _drawn_arrows(graph):
        arrow = "-.->" if a in reach[b] else "-->"  # dotted: part of a loop
        lines.append(f"    {_id(a)} {arrow} {_id(b)}")
    lines += ["```", "", "| layer | folder / module | imports (every one) |", "|---|---|---|"]
    for n in order:
        imports = " ".join(f"`{m}`" for m in sorted(graph[n], key=lambda m: (-level[m], m)))
        lines.append(f"| {level[n]} | `{n}` | {imports or '—'} |")
    found = loops(graph)
    lines.append("")
    if found:
        shown = "; ".join(" ⇄ ".join(f"`{n}`" for n in group) for group in found)
        lines.append(f"Loops (dotted arrows: these import each other): {shown}.")
    else:
        lines.append("No loops: every arrow points down a layer.")
    return "\n".join(lines)


def with_picture(doc: str, picture: str) -> str:
    """``doc`` with the text between the markers replaced by ``picture``."""
    if doc.count(BEGIN) != 1 or doc.count(END) != 1:
        raise ValueError(f"{DOC} needs the markers {BEGIN!r} and {END!r} once each")
    head, rest = doc.split(BEGIN)
    _, tail = rest.split(END)
    return f"{head}{BEGIN}\n{picture}\n{END}{tail}"


def current_picture() -> str:
    """The picture of the package as its imports are now."""
    return draw(folder_graph(_graph()))


def main() -> int:
    doc = DOC.read_text(encoding="utf-8")
    new = with_picture(doc, current_picture())
    if new != doc:
        DOC.write_text(new, encoding="utf-8")
        print(f"redrew the layers in {DOC}")
    else:
        print(f"the layers in {DOC} are current")
    return 0


if __name__ == "__main__":
    sys.exit(main())
