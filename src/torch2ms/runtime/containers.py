"""torch.nn.ModuleList built empty and filled after its parent holds it.

``self.layers = nn.ModuleList()`` then ``self.layers.append(Block())``: MindSpore's CellList names an
appended cell's parameters from the cells it already holds, so in a list assigned empty they are
named ``0.attention.wq.weight``, not ``layers.0.attention.wq.weight``, and torch's state dict (or
``load_param_into_net``) does not find them. This CellList remembers the prefix its parent gave it.
Needs MindSpore only.
"""

from __future__ import annotations

from typing import Any

from mindspore import nn

__all__ = ["ModuleList", "call_cells"]


class ModuleList(nn.CellList):
    """A CellList whose appended, extended or inserted cells are named under the list's own name."""

    def update_parameters_name(self, prefix: str = "", recurse: bool = True) -> None:
        object.__setattr__(self, "_torch2ms_prefix", prefix)
        super().update_parameters_name(prefix, recurse)

    def _name_cells(self) -> None:
        prefix = self.__dict__.get("_torch2ms_prefix")
        if prefix is not None and self._auto_prefix:
            for key, cell in self._cells.items():
                cell.update_parameters_name(f"{prefix}{key}.")

    def append(self, cell: Any) -> None:
        super().append(cell)
        self._name_cells()

    def extend(self, cells: Any) -> Any:
        out = super().extend(cells)
        self._name_cells()
        return out

    def insert(self, index: int, cell: Any) -> None:
        super().insert(index, cell)
        self._name_cells()


def call_cells(cells: Any, x: Any) -> Any:
    """A slice of an nn.Sequential called (``self.layers[1:](x)``), taken as a tuple of its cells: each
    cell in turn, as ``nn.Sequential.forward`` does. GRAPH_MODE compiles the loop without building a
    container (MindSpore's slice of a SequentialCell renames the parameters it holds)."""
    for cell in cells:
        x = cell(x)
    return x
