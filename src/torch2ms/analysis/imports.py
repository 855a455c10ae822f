"""Canonicalise names: resolve every import alias to its full ``torch.`` name.

``import torch.nn as nn`` / ``from torch import nn`` / ``import torch.nn.functional as F`` /
``from torch.nn import Conv2d`` all end up as full dotted names, so matching never depends on
how a user spelled the import.
"""

from __future__ import annotations

import ast
import re

from .astwalk import nodes

TORCH_ROOTS = ("torch", "torchvision", "torchaudio", "torchtext")
# Libraries whose calls on torch tensors the KB maps too (einops: rearrange, its torch layers).
# Converted with the torch code of a file; a file that imports only these is not torch code.
COMPANION_ROOTS = ("einops",)
FRAMEWORK_ROOTS = TORCH_ROOTS + COMPANION_ROOTS
# torch's legacy tensor types (torch.FloatTensor, torch.cuda.LongTensor...): a constructor and a dtype.
LEGACY_TENSOR_TYPES = frozenset(
    {"FloatTensor", "DoubleTensor", "HalfTensor", "LongTensor", "IntTensor", "ByteTensor", "BoolTensor"}
)


def legacy_type_name(full: str | None) -> str | None:
    """``torch.cuda.FloatTensor`` / ``torch.FloatTensor`` → ``torch.FloatTensor``; None for any other name."""
    m = re.fullmatch(r"torch(?:\.cuda)?\.(\w+)", full or "")
    return f"torch.{m.group(1)}" if m and m.group(1) in LEGACY_TENSOR_TYPES else None


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
        # Names bound by an assignment to a legacy tensor type (``Tensor = torch.FloatTensor``).
        self.legacy_aliases: set[str] = set()

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
        imap._bind_legacy_aliases(tree)
        return imap

    def _legacy_type(self, node: ast.expr) -> str | None:
        """The legacy tensor type an expression names: ``torch.FloatTensor``, or both branches of
        ``torch.cuda.FloatTensor if cuda else torch.FloatTensor`` naming the same one."""
        if isinstance(node, ast.IfExp):
            body, orelse = self._legacy_type(node.body), self._legacy_type(node.orelse)
            return body if body == orelse else None
        return legacy_type_name(self.resolve(node))

    def _bind_legacy_aliases(self, tree: ast.AST) -> None:
        """``Tensor = torch.cuda.FloatTensor if cuda else torch.FloatTensor`` (the old GAN scripts' idiom):
        ``Tensor`` names torch.FloatTensor wherever it is used (``Tensor(n, 1)``, ``x.type(Tensor)``), when
        every assignment of that name in the file binds the same legacy type and no import binds it."""
        found: dict[str, set[str | None]] = {}
        lines: dict[str, int] = {}
        assigned: set[int] = set()  # the Name targets of those assignments
        walk = nodes(tree)
        named = (ast.Attribute, ast.Name, ast.IfExp)  # the only values _legacy_type may find a type in
        for node in walk:
            if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                name, value = node.targets[0].id, node.value
                found.setdefault(name, set()).add(self._legacy_type(value) if isinstance(value, named) else None)
                lines.setdefault(name, node.lineno)
                assigned.add(id(node.targets[0]))
        if all(kinds == {None} for kinds in found.values()):
            return  # (most files) no assignment names a legacy type: nothing to bind
        for node in walk:
            if isinstance(node, ast.arg):
                found.setdefault(node.arg, set()).add(None)  # a parameter of that name: any value
            elif isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load) and id(node) not in assigned:
                found.setdefault(node.id, set()).add(None)  # bound by a loop, `with`, a tuple target...
        for name, kinds in found.items():
            (kind,) = kinds if len(kinds) == 1 else (None,)
            if kind is not None and name not in self.names:
                self._bind(name, kind, lines[name])
                self.legacy_aliases.add(name)

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
