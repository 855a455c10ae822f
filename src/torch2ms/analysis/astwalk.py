"""One flat walk per tree, shared by every analysis that reads a whole module.

A dozen passes (imports, inference, plan, re-exports, training, checkpoints, data pipelines) each
used to ``ast.walk`` the module; the generator costs far more than iterating a list. The trees are
never mutated after parsing, so the list stays valid for the tree's lifetime.
"""

from __future__ import annotations

import ast

_ATTR = "_torch2ms_nodes"


def nodes(tree: ast.AST) -> list[ast.AST]:
    """Every node under ``tree`` in ``ast.walk`` order, computed once per tree."""
    cached = getattr(tree, _ATTR, None)
    if cached is None:
        cached = list(ast.walk(tree))
        setattr(tree, _ATTR, cached)
    return cached
