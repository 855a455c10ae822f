"""torch.finfo / torch.iinfo: the limits of a float dtype as Python numbers, in PyNative and inside a GRAPH_MODE construct.

numpy.finfo gives numpy scalars (``x.masked_fill(mask, -finfo.max)`` then fails: "ScalarToTensor ... got
float32") and ``mindspore.dtype_to_nptype`` cannot run in a graph; here the numbers are worked out when the
graph is compiled (constexpr) and held in a namedtuple with torch's field names. Needs MindSpore only.
"""

from __future__ import annotations

import collections
from typing import Any

import mindspore
import numpy as np
from mindspore.ops import constexpr

__all__ = ["finfo", "iinfo"]

IntInfo = collections.namedtuple("IntInfo", ["bits", "max", "min", "dtype"])
FloatInfo = collections.namedtuple(
    "FloatInfo", ["bits", "eps", "max", "min", "tiny", "smallest_normal", "resolution", "dtype"]
)


@constexpr
def _float_info(dtype: Any) -> tuple:
    info = np.finfo(mindspore.dtype_to_nptype(dtype if dtype is not None else mindspore.float32))
    tiny = float(info.tiny)
    return (
        int(info.bits),
        float(info.eps),
        float(info.max),
        float(info.min),
        tiny,
        tiny,
        float(info.resolution),
        str(info.dtype),
    )


def finfo(type: Any = None) -> Any:
    """torch.finfo(dtype): bits, eps, max, min, tiny, smallest_normal, resolution (Python numbers), dtype."""
    return FloatInfo(*_float_info(type))


@constexpr
def _int_info(dtype: Any) -> tuple:
    info = np.iinfo(mindspore.dtype_to_nptype(dtype))
    return (int(info.bits), int(info.max), int(info.min), str(info.dtype))


def iinfo(type: Any) -> Any:
    """torch.iinfo(dtype): bits, max, min (Python ints), dtype."""
    return IntInfo(*_int_info(type))
