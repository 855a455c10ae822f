"""(values, indices) results with torch's int64 indices: MindSpore's topk / sort / max(dim) / pooling
with indices give int32 ones. Needs MindSpore only; GRAPH_MODE compiles the helper with its caller."""

from __future__ import annotations

from typing import Any

import mindspore as ms

__all__ = ["with_int64_indices"]


def with_int64_indices(pair: Any) -> Any:
    """``(values, indices)`` of a MindSpore op with the indices cast to int64, as torch returns them."""
    values, indices = pair
    return values, indices.astype(ms.int64)
