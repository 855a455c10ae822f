"""torch.cat / torch.stack of tensors of different dtypes: torch promotes them to one result type (int64
labels concatenated with a float padding label give float32), MindSpore's Concat and Stack kernels refuse
mixed inputs ("The kernel 'Concat' does not support this kernel data type", "All input must have the same
data type"). The result type follows torch's order of categories (bool < integer < floating < complex, the
widest dtype of the highest category present; float16 with bfloat16 gives float32, uint8 with int8 int16).
The dtypes are read from the tensors, so GRAPH_MODE folds the choice away at compile time; tensors of one
dtype go to ops.cat / ops.stack untouched. Needs MindSpore only."""

from __future__ import annotations

from typing import Any

import mindspore as ms
from mindspore import ops

__all__ = ["cat", "stack"]

_ORDER = (
    ms.bool_,
    ms.uint8,
    ms.int8,
    ms.int16,
    ms.int32,
    ms.int64,
    ms.float16,
    ms.bfloat16,
    ms.float32,
    ms.float64,
    ms.complex64,
    ms.complex128,
)


def _rank(dtype: Any) -> int:
    for i, known in enumerate(_ORDER):
        if dtype == known:
            return i
    return -1


def _promote(a: Any, b: Any) -> Any:
    """torch.promote_types(a, b) for the dtypes MindSpore has."""
    if a == b:
        return a
    ra, rb = _rank(a), _rank(b)
    if ra < 0 or rb < 0:
        return a if ra < 0 else b
    lo, hi = (a, b) if ra < rb else (b, a)
    if (hi == ms.int8 and lo == ms.uint8) or (hi == ms.bfloat16 and lo == ms.float16):
        return ms.int16 if hi == ms.int8 else ms.float32
    return hi


def _common(tensors: Any) -> Any:
    out = tensors[0].dtype
    for t in tensors[1:]:
        out = _promote(out, t.dtype)
    return out


def _same_dtype(tensors: Any) -> Any:
    tensors = tuple(tensors)
    dtype = _common(tensors)
    mixed = False
    for t in tensors:
        if t.dtype != dtype:
            mixed = True
    if mixed:
        return tuple(t.astype(dtype) for t in tensors)
    return tensors


def cat(tensors: Any, axis: int = 0) -> Any:
    """torch.cat(tensors, dim): ops.cat after promoting the tensors to torch's common dtype."""
    return ops.cat(_same_dtype(tensors), axis)


def stack(tensors: Any, axis: int = 0) -> Any:
    """torch.stack(tensors, dim): ops.stack after promoting the tensors to torch's common dtype."""
    return ops.stack(_same_dtype(tensors), axis)
