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


def _own_prefix(cells: Any) -> str:
    """The name prefix a container's parameters carry: read off a parameter whose name ends with its
    path inside the container (MindSpore guesses it from the first key it meets in a name, which in
    ``input_blocks.0.0.weight`` is the inner ``0``), else the prefix its parent last gave it."""
    for path, param in cells.parameters_and_names():
        rest = param.name[: -len(path)]
        if param.name.endswith(path) and rest in ("", rest.rstrip(".") + "."):
            return rest
    return cells.__dict__.get("_torch2ms_prefix") or ""


def _name_by_path(cells: Any, prefix: str) -> None:
    """Every parameter under ``cells`` named by its path, as torch's state dict keys it."""
    if cells._auto_prefix:
        for path, param in cells.parameters_and_names():
            param.name = prefix + path


class ModuleList(nn.CellList):
    """A CellList whose appended, extended or inserted cells are named under the list's own name."""

    def update_parameters_name(self, prefix: str = "", recurse: bool = True) -> None:
        object.__setattr__(self, "_torch2ms_prefix", prefix)
        super().update_parameters_name(prefix, recurse)

    def append(self, cell: Any) -> None:
        prefix = _own_prefix(self)
        super().append(cell)
        _name_by_path(self, prefix)

    def extend(self, cells: Any) -> Any:
        prefix = _own_prefix(self)
        out = super().extend(list(cells))
        _name_by_path(self, prefix)
        return out

    def insert(self, index: int, cell: Any) -> None:
        prefix = _own_prefix(self)
        super().insert(index, cell)
        _name_by_path(self, prefix)

    def __iadd__(self, cells: Any) -> Any:
        return self.extend(cells)


def call_cells(cells: Any, x: Any) -> Any:
    """A slice of an nn.Sequential called (``self.layers[1:](x)``), taken as a tuple of its cells: each
    cell in turn, as ``nn.Sequential.forward`` does. GRAPH_MODE compiles the loop without building a
    container (MindSpore's slice of a SequentialCell renames the parameters it holds)."""
    for cell in cells:
        x = cell(x)
    return x
