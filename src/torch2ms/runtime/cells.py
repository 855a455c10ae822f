"""Cell attributes that must not become sub-cells."""

from __future__ import annotations

from typing import Any

__all__ = ["CellParameters", "plain_attribute"]


def plain_attribute(cell: Any, name: str, value: Any) -> Any:
    """``self.opt = Adam(self.parameters())`` inside a Module: torch keeps the optimizer as a plain
    attribute. A MindSpore optimizer is a Cell: assigned normally it becomes a sub-cell, and the
    parameters it holds are renamed under it (``weight`` → ``opt.weight``), so checkpoints no
    longer match. Stored outside the Cell's registry, it stays a plain attribute."""
    object.__setattr__(cell, name, value)
    return value


class CellParameters:
    """``self.parameters()`` read inside forward (``next(self.parameters()).dtype``, a parameter count,
    parameters passed to a helper): GRAPH_MODE compiles no ``Cell.get_parameters()`` call in construct.
    Declared on the class (``_t2m_parameters = CellParameters()``), ``self._t2m_parameters`` is the
    tuple of the cell's parameters, read in Python each time the attribute is read (GRAPH_MODE reads it
    while it compiles), so it follows the cell's current parameters: the same Parameter objects, in
    get_parameters()'s order (torch's parameters() order; BatchNorm's moving statistics, buffers in
    torch, sit in it as Parameters)."""

    def __get__(self, cell: Any, owner: Any = None) -> Any:
        if cell is None:
            return self
        return tuple(cell.get_parameters())
