"""``torch.finfo`` / ``torch.iinfo`` of a MindSpore dtype: MindSpore 2.10 has neither, numpy's say the same
(eps, max, min, tiny, resolution, bits). Needs MindSpore and numpy only."""

from __future__ import annotations

from typing import Any

import mindspore as ms
import numpy as np

__all__ = ["finfo", "iinfo"]


def finfo(dtype: Any = None) -> np.finfo:
    """``torch.finfo(dtype)``; without a dtype, of float32 (torch's default dtype)."""
    return np.finfo(np.float32 if dtype is None else ms.dtype_to_nptype(dtype))


def iinfo(dtype: Any) -> np.iinfo:
    """``torch.iinfo(dtype)``."""
    return np.iinfo(ms.dtype_to_nptype(dtype))
