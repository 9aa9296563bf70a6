"""The plan as a picture: Graphviz DOT or Mermaid text for ``Dataflow.explain(format=...)``.

One box per node (``#id op`` and its output columns), one arrow per input, a dashed arrow
from each loop variable's result back to the variable (the next iteration), and each
``iterate`` body drawn as a box around its nodes, nested as the scopes are. Paste the DOT
into Graphviz (``dot -Tsvg``) or the Mermaid into any Markdown renderer that draws it
(GitHub, mkdocs-material).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal

from ddflow.errors import PlanError
from ddflow.plan import Plan, PlanText

__all__ = ["GRAPH_FORMATS", "plan_graph"]

GRAPH_FORMATS = ("dot", "mermaid")
"""The picture formats ``explain`` draws besides its text listing."""

_MAX_COLUMNS = 6
"""Columns listed in a node's box before the rest are counted."""


def _title(node: dict[str, Any]) -> str:
    """A node's first line: ``#id op``."""
    return "#{} {}".format(node["id"], node["op"])


def _columns(node: dict[str, Any]) -> str:
    """A node's output columns, the first few of many."""
    cols = list(node["columns"])
    shown = ", ".join(cols[:_MAX_COLUMNS])
    more = len(cols) - _MAX_COLUMNS
    return f"({shown}{f', +{more} more' if more > 0 else ''})"


def _edges(plan: Plan) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
    """The input arrows (source, node) and the feedback arrows (result, variable)."""
    inputs = [(i, node["id"]) for node in plan.nodes for i in node["inputs"]]
    feedback = [(node["result"], node["id"]) for node in plan.nodes if node["op"] == "variable"]
    return inputs, feedback


def _walk(
    plan: Plan,
    node_line: Callable[[dict[str, Any]], str],
    open_line: Callable[[int], str],
    close_line: str,
) -> list[str]:
    """The node and scope lines, scope by scope depth first (a scope's own nodes, then its
    child scopes inside it), indented by depth."""
    children: dict[int, list[int]] = {}
    for s in range(1, len(plan.scopes)):
        parent = plan.scopes[s].parent
        children.setdefault(0 if parent is None else parent, []).append(s)
    lines: list[str] = []

    def walk(scope: int, indent: str) -> None:
        lines.extend(indent + node_line(n) for n in plan.nodes if n["scope"] == scope)
        for child in children.get(scope, []):
            lines.append(indent + open_line(child))
            walk(child, indent + "  ")
            lines.append(indent + close_line)

    walk(0, "  ")
    return lines


def _scope_title(plan: Plan, s: int) -> str:
    return f"scope {s}: {plan.scopes[s].label}"


def _dot(plan: Plan) -> str:
    def escape(text: str) -> str:
        return text.replace("\\", "\\\\").replace('"', '\\"')

    def quote(text: str) -> str:
        return '"' + escape(text) + '"'

    def node_line(n: dict[str, Any]) -> str:
        # DOT's line break inside a label is the two characters backslash and n.
        label = '"' + escape(_title(n)) + "\\n" + escape(_columns(n)) + '"'
        return f"n{n['id']} [label={label}];"

    lines = ["digraph dataflow {", '  node [shape=box, fontname="monospace"];']
    lines += _walk(
        plan,
        node_line,
        lambda s: f"subgraph cluster_{s} {{ label={quote(_scope_title(plan, s))};",
        "}",
    )
    inputs, feedback = _edges(plan)
    lines += [f"  n{a} -> n{b};" for a, b in inputs]
    lines += [f'  n{a} -> n{b} [style=dashed, label="next iteration"];' for a, b in feedback]
    lines.append("}")
    return "\n".join(lines)


def _mermaid(plan: Plan) -> str:
    def quote(text: str) -> str:
        return '"' + text.replace('"', "#quot;") + '"'

    lines = ["flowchart TD"]
    lines += _walk(
        plan,
        lambda n: f"n{n['id']}[{quote(_title(n) + '<br/>' + _columns(n))}]",
        lambda s: f"subgraph s{s}[{quote(_scope_title(plan, s))}]",
        "end",
    )
    inputs, feedback = _edges(plan)
    lines += [f"  n{a} --> n{b}" for a, b in inputs]
    lines += [f"  n{a} -. next iteration .-> n{b}" for a, b in feedback]
    return "\n".join(lines)


def plan_graph(plan: Plan, fmt: Literal["dot", "mermaid"]) -> PlanText:
    """``plan`` drawn in ``fmt`` (``"dot"`` or ``"mermaid"``)."""
    if fmt == "dot":
        return PlanText(_dot(plan))
    if fmt == "mermaid":
        return PlanText(_mermaid(plan))
    raise PlanError(f"explain: format must be 'text', 'dot' or 'mermaid', got {fmt!r}")
