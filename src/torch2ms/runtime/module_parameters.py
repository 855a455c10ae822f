"""torch's ``model.parameters()`` read inside a training step's loss (issue 22, class 10: an L2 penalty
``loss = criterion(out, y) + 0.01 * sum(p.pow(2).sum() for p in model.parameters())``).

The converted step is compiled (``@mindspore.jit``, and GRAPH_MODE compiles it anyway), and MindSpore
compiles no ``Cell.get_parameters()`` / ``trainable_params()`` call there ("the method or function
'mindspore.nn.cell.Cell.get_parameters' is not supported in 'construct'", measured on 2.10); a tuple of
Parameters made before the loop compiles in both modes, and the graph reads each Parameter's current value
at every step (the same objects the optimizer updates). The conversion binds that tuple before the loop
with these helpers and reads it in ``forward_fn``.

What the tuple holds is torch's ``parameters()``: the cell's Parameters in ``get_parameters()`` order
(torch's order), frozen ones included, without BatchNorm's moving mean and variance — Parameters in
MindSpore, buffers in torch — so a penalty over them has torch's value. Needs MindSpore only.
"""

from __future__ import annotations

from typing import Any

__all__ = ["torch_named_parameters", "torch_parameters"]

_STATISTICS = ("moving_mean", "moving_variance")
# MindSpore's leaf names where torch's differ: BatchNorm/LayerNorm/GroupNorm's gamma and beta, Embedding's table
_TORCH_LEAF = {"gamma": "weight", "beta": "bias", "embedding_table": "weight"}


def _statistics(cell: Any) -> set[int]:
    """ids of the BatchNorm statistics held by ``cell`` and its sub-cells."""
    found: set[int] = set()
    for _name, sub in cell.cells_and_names():
        for attr in _STATISTICS:
            value = sub.__dict__.get("_params", {}).get(attr)
            if value is not None:
                found.add(id(value))
    return found


def _torch_name(name: str) -> str:
    head, dot, leaf = name.rpartition(".")
    return head + dot + _TORCH_LEAF.get(leaf, leaf)


def torch_named_parameters(cell: Any) -> tuple[tuple[str, Any], ...]:
    """torch's ``cell.named_parameters()`` as a tuple of ``(name, Parameter)``: the path in ``cell`` with
    torch's leaf names (a norm layer's ``gamma``/``beta`` are ``weight``/``bias``, so ``'bias' not in name``
    filters as in torch), BatchNorm statistics left out."""
    skip = _statistics(cell)
    return tuple((_torch_name(name), p) for name, p in cell.parameters_and_names() if id(p) not in skip)


def torch_parameters(cell: Any, named: bool = False) -> tuple[Any, ...]:
    """torch's ``cell.parameters()`` as a tuple of Parameters (``named_parameters()`` with ``named``),
    BatchNorm statistics left out: they are buffers in torch, and a loop that changes every parameter
    (``p.data.clamp_(-c, c)``) must not change them."""
    pairs = torch_named_parameters(cell)
    return pairs if named else tuple(p for _name, p in pairs)
