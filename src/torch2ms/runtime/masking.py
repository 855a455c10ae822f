"""``x[mask] = value`` and ``x[mask] += value`` with a boolean mask (segment-anything's
``point_embedding[labels == 0] += self.point_embeddings[0].weight``). PyNative takes them; GRAPH_MODE's
setitem by a bool tensor broadcasts the value to the whole tensor ("For 'BroadcastTo' ... x_shape:
{-1, 4, 1}") and fails. The same update as ``ops.where``: the mask, widened to x's rank, picks the new
value where it is set and x elsewhere. A value with one row per selected element (torch's
``x[mask] = rows``) goes through ``masked_scatter``. Needs MindSpore only."""

from __future__ import annotations

from typing import Any

import mindspore as ms
from mindspore import ops

__all__ = ["masked_assign"]


def _apply(op: str, old: Any, value: Any) -> Any:
    if op == "add":
        return old + value
    if op == "sub":
        return old - value
    if op == "mul":
        return old * value
    if op == "div":
        return old / value
    return value


def masked_assign(x: Any, mask: Any, value: Any, op: str = "") -> Any:
    """x with ``x[mask] = value`` (``op`` "": plain assignment) or ``x[mask] op= value`` (op "add",
    "sub", "mul", "div") applied, as torch; ``mask`` is a bool tensor over x's leading dimensions."""
    rest = x.ndim - mask.ndim
    wide = mask.reshape(mask.shape + (1,) * rest)
    if isinstance(value, ms.Tensor) and value.ndim > rest and not (value.ndim == rest + 1 and value.shape[0] == 1):
        # one row per selected element: torch's x[mask] = rows
        rows = _apply(op, x[mask], value).astype(x.dtype)
        return x.masked_scatter(ops.broadcast_to(wide, x.shape), rows)
    if isinstance(value, ms.Tensor) and value.ndim == rest + 1:
        value = value.reshape(value.shape[1:])
    new = _apply(op, x, value)
    if not isinstance(new, ms.Tensor):
        new = ops.full_like(x, new)
    return ops.where(wide, new.astype(x.dtype), x)
