"""Small libcst helpers shared by the converter's passes."""

from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

if TYPE_CHECKING:
    from ..analysis.imports import ImportMap


def dotted(node: cst.BaseExpression) -> str | None:
    """``a.b.c`` for a Name/Attribute chain, else None."""
    parts: list[str] = []
    while isinstance(node, cst.Attribute):
        parts.append(node.attr.value)
        node = node.value
    if isinstance(node, cst.Name):
        parts.append(node.value)
        return ".".join(reversed(parts))
    return None


def resolve(imap: "ImportMap", node: cst.BaseExpression) -> str | None:
    """The full torch name of a Name/Attribute chain rooted at a torch import, else None."""
    name = dotted(node)
    if not name:
        return None
    root, _, rest = name.partition(".")
    base = imap.names.get(root)
    if base is None or not imap.is_framework(base):
        return None
    return f"{base}.{rest}" if rest else base


_EMPTY = cst.Module([])


def code(node: cst.CSTNode) -> str:
    """Source text of a node (libcst codegen outside any module)."""
    return _EMPTY.code_for_node(node)
