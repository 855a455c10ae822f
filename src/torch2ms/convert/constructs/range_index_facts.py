"""Which statements subscript with a ``range(...)`` (index_fixes.py rewrites them): an ``ast`` pass the
plan uses before the rewrite stage, so such statements are visited whether or not they name torch."""

from __future__ import annotations

import ast
import re

from ..plan import header_nodes

# `x[range(n), y]` / `x[a, range(n)]` in the text: rare, and the tree walks below are not free
_RANGE_INDEX_TEXT = re.compile(r"[\[,]\s*range\(")


def may_have_range_index(source: str | None) -> bool:
    """A cheap text test before any walk (None: unknown, so walk)."""
    return source is None or "range(" in source and _RANGE_INDEX_TEXT.search(source) is not None


def _is_range(node: ast.expr) -> bool:
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "range"


def range_index_in(root: ast.AST) -> bool:
    """Whether ``root`` subscripts something with a ``range(...)`` (alone or in a tuple index)."""
    for n in ast.walk(root):
        if isinstance(n, ast.Subscript):
            parts = n.slice.elts if isinstance(n.slice, ast.Tuple) else [n.slice]
            if any(_is_range(p) for p in parts):
                return True
    return False


def mark_range_indices(plan) -> None:
    """Statements (and their enclosing ones) with a range index are visited."""
    ends: list[tuple[int, int]] = []  # open compound statements: (index, last nested index)
    for i, info in enumerate(plan):
        while ends and ends[-1][1] < i:
            ends.pop()
        if any(range_index_in(root) for root in header_nodes(info.node)):
            info.interesting = info.header = True
            for j, _ in ends:
                plan[j].interesting = True
        if info.size:
            ends.append((i, i + info.size))
