"""Walking a JSON tree (an engine's serialized parse tree or plan) without recursion, so a deeply nested
statement cannot overflow the stack."""

from __future__ import annotations

from typing import Any, Iterator


def json_nodes(tree: Any, *, strings: bool = False) -> Iterator[Any]:
    """Every object (dict) of ``tree``, depth first; with ``strings``, every string value as well."""
    stack = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, list):
            stack.extend(node)
        elif isinstance(node, dict):
            yield node
            stack.extend(node.values())
        elif strings and isinstance(node, str):
            yield node
