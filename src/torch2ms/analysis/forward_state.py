"""Attributes a Module caches on itself in forward (static, ``ast`` only).

``self.src_mask = None`` in ``__init__``, then in ``forward``: ``if self.src_mask is None or ...:
self.src_mask = <built from the input>`` and ``self.encoder(x, mask=self.src_mask)``. GRAPH_MODE
cannot carry such a tensor attribute (convert/constructs/graph_mode.py makes it a local).
"""

from __future__ import annotations

import ast

from .astwalk import nodes


def self_attr(node: ast.AST) -> str | None:
    """``self.x`` → "x"."""
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self":
        return node.attr
    return None


def forward_caches(cls: ast.ClassDef) -> list[str]:
    """Attributes set to None in __init__, assigned in forward from values that do not read them,
    and used by no other method."""
    methods = {f.name: f for f in cls.body if isinstance(f, ast.FunctionDef)}
    init, forward = methods.get("__init__"), methods.get("forward")
    if init is None or forward is None:
        return []
    none_attrs = {
        name
        for n in nodes(init)
        if isinstance(n, ast.Assign) and isinstance(n.value, ast.Constant) and n.value.value is None
        for t in n.targets
        if (name := self_attr(t))
    }
    out = []
    for attr in sorted(none_attrs):
        writes = [
            n for n in nodes(forward) if isinstance(n, ast.Assign) and any(self_attr(t) == attr for t in n.targets)
        ]
        elsewhere = any(
            self_attr(n) == attr for name, f in methods.items() if name not in ("__init__", "forward") for n in nodes(f)
        )
        reads_itself = any(self_attr(n) == attr for w in writes for n in nodes(w.value))
        if writes and not elsewhere and not reads_itself:
            out.append(attr)
    return out
