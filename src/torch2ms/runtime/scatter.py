"""torch's scatter_reduce and index_reduce on MindSpore (used by converted code; GRAPH_MODE-safe).

MindSpore's element-wise scatter (ops.tensor_scatter_elements) only replaces or adds. These
helpers turn torch's (dim, index) addressing into full coordinates and use the n-d scatters
(tensor_scatter_add / mul / max / min), which reduce duplicate targets the way torch does.
"""

from __future__ import annotations

from typing import Any

import mindspore
from mindspore import ops

__all__ = ["index_reduce", "scatter_reduce"]

_REDUCES = ("sum", "prod", "mean", "amax", "amin")


def _coordinates(index: Any, dim: int) -> Any:
    """(*index.shape, ndim) coordinates: every position of ``index``, its value on axis ``dim``."""
    ndim = index.ndim
    dim = dim % ndim
    axes = []
    for axis in range(ndim):
        if axis == dim:
            axes.append(index.astype(mindspore.int64))
        else:
            shape = [1] * ndim
            shape[axis] = index.shape[axis]
            axes.append(ops.arange(index.shape[axis]).reshape(tuple(shape)).broadcast_to(index.shape))
    return ops.stack(axes, -1)


def scatter_reduce(x: Any, dim: int, index: Any, src: Any, reduce: str, include_self: bool = True) -> Any:
    """``x.scatter_reduce(dim, index, src, reduce, include_self=...)`` (out of place), as torch.

    Only ``src[:index.shape]`` is used, as in torch. Targets no index reaches keep x's value.
    """
    if reduce not in _REDUCES:
        raise ValueError(f"scatter_reduce: reduce must be one of {_REDUCES}, got {reduce!r}")
    coords = _coordinates(index, dim)
    src = src[tuple(slice(0, n) for n in index.shape)].astype(x.dtype)
    if reduce in ("amax", "amin"):
        # Seeding each target with one of its own sources makes include_self=False exact.
        base = x if include_self else ops.tensor_scatter_update(x, coords, src)
        scatter = ops.tensor_scatter_max if reduce == "amax" else ops.tensor_scatter_min
        return scatter(base, coords, src)
    if reduce == "prod":
        base = x if include_self else ops.tensor_scatter_update(x, coords, ops.ones_like(src))
        return ops.tensor_scatter_mul(base, coords, src)
    base = x if include_self else ops.tensor_scatter_update(x, coords, ops.zeros_like(src))
    total = ops.tensor_scatter_add(base, coords, src)
    if reduce == "sum":
        return total
    ones = ops.ones_like(x)
    seed = ones if include_self else ops.tensor_scatter_update(ones, coords, ops.zeros_like(src))
    count = ops.tensor_scatter_add(seed, coords, ops.ones_like(src))
    mean = total / ops.maximum(count, ops.ones_like(count))
    if not x.is_floating_point():
        mean = ops.floor(mean)  # torch's integer mean rounds down
    return ops.where(count > 0, mean.astype(x.dtype), x)


def index_reduce(x: Any, dim: int, index: Any, source: Any, reduce: str, include_self: bool = True) -> Any:
    """``x.index_reduce(dim, index, source, reduce, include_self=...)``: slice ``i`` of ``source``
    along ``dim`` reduced into slice ``index[i]`` of x (out of place)."""
    dim = dim % source.ndim
    shape = [1] * source.ndim
    shape[dim] = index.shape[0]
    full = index.reshape(tuple(shape)).broadcast_to(source.shape)
    return scatter_reduce(x, dim, full, source, reduce, include_self)
