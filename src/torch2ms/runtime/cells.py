"""Cell attributes that must not become sub-cells."""

from __future__ import annotations

from typing import Any

__all__ = ["plain_attribute"]


def plain_attribute(cell: Any, name: str, value: Any) -> Any:
    """``self.opt = Adam(self.parameters())`` inside a Module: torch keeps the optimizer as a plain
    attribute. A MindSpore optimizer is a Cell: assigned normally it becomes a sub-cell, and the
    parameters it holds are renamed under it (``weight`` → ``opt.weight``), so checkpoints no
    longer match. Stored outside the Cell's registry, it stays a plain attribute."""
    object.__setattr__(cell, name, value)
    return value
