"""Canonicalise names: resolve every import alias to its full ``torch.`` name.

``import torch.nn as nn`` / ``from torch import nn`` / ``import torch.nn.functional as F`` /
``from torch.nn import Conv2d`` all end up as full dotted names, so matching never depends on
how a user spelled the import.
"""

from __future__ import annotations

import ast

from .astwalk import nodes

TORCH_ROOTS = ("torch", "torchvision", "torchaudio", "torchtext")
# Libraries whose calls on torch tensors the KB maps too (einops: rearrange, its torch layers).
# Converted with the torch code of a file; a file that imports only these is not torch code.
COMPANION_ROOTS = ("einops",)
FRAMEWORK_ROOTS = TORCH_ROOTS + COMPANION_ROOTS


class ImportMap:
    """Local name → full dotted name, for names bound by import statements."""

    def __init__(self, local_roots: frozenset[str] = frozenset()) -> None:
        self.names: dict[str, str] = {}
        self.lines: dict[str, int] = {}
        # Top-level packages of the project being converted: never framework code, even when
        # the project is itself called torchvision.
        self.local_roots = local_roots
        # Modules star-imported (``from torch.nn import *``): their names are unknown until looked up.
        self.stars: list[str] = []

    @classmethod
    def from_tree(cls, tree: ast.AST, local_roots: frozenset[str] = frozenset()) -> ImportMap:
        imap = cls(local_roots)
        for node in nodes(tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.asname:
                        imap._bind(alias.asname, alias.name, node.lineno)
                    else:
                        root = alias.name.split(".", 1)[0]
                        imap._bind(root, root, node.lineno)
            elif isinstance(node, ast.ImportFrom):
                # Relative imports (from ..ops.misc import MLP) are the project's own names.
                module = "." * node.level + (node.module or "")
                for alias in node.names:
                    if alias.name == "*":
                        if node.module and not node.level:
                            imap.stars.append(node.module)
                        continue
                    full = f"{module}.{alias.name}" if node.module else f"{module}{alias.name}"
                    imap._bind(alias.asname or alias.name, full, node.lineno)
        return imap

    def _bind(self, local: str, full: str, line: int) -> None:
        self.names[local] = full
        self.lines.setdefault(local, line)

    def resolve(self, node: ast.AST) -> str | None:
        """The full dotted name of a Name/Attribute chain whose root is an imported name."""
        parts: list[str] = []
        while isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        if not isinstance(node, ast.Name):
            return None
        base = self.names.get(node.id)
        if base is None:
            return None
        return ".".join([base, *reversed(parts)])

    def is_framework(self, full: str | None) -> bool:
        root = full.split(".", 1)[0] if full else ""
        return root in FRAMEWORK_ROOTS and root not in self.local_roots

    def uses_torch(self) -> bool:
        return any(self.is_framework(v) and v.split(".", 1)[0] in TORCH_ROOTS for v in self.names.values())
