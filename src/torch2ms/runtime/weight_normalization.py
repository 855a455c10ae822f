"""torch.nn.utils.weight_norm and torch.nn.utils.parametrizations.weight_norm on a MindSpore Cell.

MindSpore 2.10 has no weight-norm hook nor parametrizations. The layer's weight Parameter is replaced
by a magnitude ``g`` and a direction ``v`` (torch's names and shapes, so a torch state dict loads by
name), and ``weight`` becomes a property that computes ``g * v / ||v||`` each time the layer's own
``construct`` reads it: a property is compiled into the graph in GRAPH_MODE, so both modes train g
and v. Needs MindSpore only. (Not named weight_norm.py: the package attribute would shadow the helper.)
"""

from __future__ import annotations

from typing import Any

import mindspore as ms
from mindspore import nn, ops

__all__ = ["weight_norm", "remove_weight_norm", "parametrized_weight_norm"]

# torch's parameter name → what MindSpore's layers call it (nn.Embedding: embedding_table).
_MS_NAMES = {"weight": ("weight", "embedding_table")}


def _norm_axes(ndim: int, dim: int) -> tuple[int, ...]:
    """The axes torch's ``norm_except_dim(v, 2, dim)`` sums over: all but ``dim``; ``dim == -1``
    (torch's spelling of None) is the whole tensor. Computed outside the graph (no comprehension there)."""
    return tuple(range(ndim)) if dim == -1 else tuple(a for a in range(ndim) if a != dim)


def _norm(v: Any, axes: tuple[int, ...], keep: bool) -> Any:
    return ops.sqrt((v * v).sum(axis=axes, keepdims=keep))


def _torch_shape(cell: Any, weight: Any) -> tuple[int, ...]:
    """The shape torch gives this weight: MindSpore's Conv1d family stores (out, in, 1, k)."""
    shape = tuple(weight.shape)
    if isinstance(cell, (nn.Conv1d, nn.Conv1dTranspose)) and len(shape) == 4 and shape[2] == 1:
        return shape[:2] + shape[3:]
    return shape


def _ms_name(cell: Any, name: str) -> str:
    for candidate in _MS_NAMES.get(name, (name,)):
        if isinstance(getattr(cell, candidate, None), ms.Parameter):
            return candidate
    raise ValueError(f"weight_norm: {type(cell).__name__} has no parameter {name!r}: pass the name it has in MindSpore")


def _weight_property(read_g: Any, read_v: Any, split: tuple[Any, ...]) -> property:
    _, _, v0, dim, ms_shape = split
    axes, keep = _norm_axes(v0.ndim, dim), dim != -1

    def compute(self: Any) -> Any:
        v = read_v(self)
        return (v * (read_g(self) / _norm(v, axes, keep))).reshape(ms_shape)

    return property(compute)


# Readers are named functions: GRAPH_MODE parses a lambda from its source line and fails on two in one.
def _reader(attr: str) -> Any:
    def read(cell: Any) -> Any:
        return getattr(cell, attr)

    return read


def _original_reader(name: str, attr: str) -> Any:
    def read(cell: Any) -> Any:
        return getattr(getattr(cell.parametrizations, name), attr)

    return read


def _with_property(cell: Any, ms_name: str, prop: property) -> Any:
    """The cell, its class swapped for a subclass whose ``ms_name`` is ``prop`` (its own construct is kept)."""
    base = type(cell)
    cls = type(f"WeightNorm{base.__name__}", (base,), {ms_name: prop, "__module__": base.__module__})
    cell.__class__ = cls
    return cell


def _split(cell: Any, name: str, dim: int | None) -> tuple[str, Any, Any, int, tuple[int, ...]]:
    """Remove the weight Parameter: (its MindSpore name, g, v in torch's shape, dim, MindSpore shape)."""
    ms_name = _ms_name(cell, name)
    weight = getattr(cell, ms_name)
    dim = -1 if dim is None else dim
    v = ops.reshape(weight.value(), _torch_shape(cell, weight))
    if dim < -1:
        dim += v.ndim
    delattr(cell, ms_name)
    return ms_name, _norm(v, _norm_axes(v.ndim, dim), dim != -1), v, dim, tuple(weight.shape)


def weight_norm(module: Any, name: str = "weight", dim: int | None = 0) -> Any:
    """torch.nn.utils.weight_norm: ``module`` gets ``{name}_g`` and ``{name}_v`` and computes ``name``."""
    split = _split(module, name, dim)
    g_name, v_name = f"{name}_g", f"{name}_v"
    setattr(module, g_name, ms.Parameter(split[1], name=g_name))
    setattr(module, v_name, ms.Parameter(split[2], name=v_name))
    prop = _weight_property(_reader(g_name), _reader(v_name), split)
    return _with_property(module, split[0], prop)


def remove_weight_norm(module: Any, name: str = "weight") -> Any:
    """torch.nn.utils.remove_weight_norm: the computed weight becomes a plain Parameter again."""
    ms_name = _ms_name_of_property(module, name)
    weight = getattr(module, ms_name)
    module.__class__ = type(module).__mro__[1]
    for suffix in ("_g", "_v"):
        delattr(module, f"{name}{suffix}")
    setattr(module, ms_name, ms.Parameter(weight, name=ms_name))
    return module


def _ms_name_of_property(module: Any, name: str) -> str:
    for candidate in _MS_NAMES.get(name, (name,)):
        if isinstance(type(module).__dict__.get(candidate), property):
            return candidate
    raise ValueError(f"remove_weight_norm: weight_norm of {name!r} not found in {type(module).__name__}")


class _Originals(nn.Cell):
    """torch's ``parametrizations.<name>``: holds ``original0`` (g) and ``original1`` (v)."""

    def __init__(self, g: Any, v: Any) -> None:
        super().__init__()
        self.original0 = ms.Parameter(g, name="original0")
        self.original1 = ms.Parameter(v, name="original1")


def parametrized_weight_norm(module: Any, name: str = "weight", dim: int | None = 0) -> Any:
    """torch.nn.utils.parametrizations.weight_norm: the state dict names are
    ``parametrizations.{name}.original0`` (g) and ``.original1`` (v), as torch's."""
    split = _split(module, name, dim)
    holder = getattr(module, "parametrizations", None)
    if holder is None:
        holder = nn.Cell()
        module.parametrizations = holder
    originals = _Originals(split[1], split[2])
    holder.insert_child_to_cell(name, originals)
    originals.update_parameters_name(f"parametrizations.{name}.")  # torch's state-dict names
    prop = _weight_property(_original_reader(name, "original0"), _original_reader(name, "original1"), split)
    return _with_property(module, split[0], prop)
