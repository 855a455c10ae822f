"""Sparse arguments that torch also accepts dense."""

from __future__ import annotations

from typing import Any

from mindspore import COOTensor, CSRTensor

__all__ = ["to_dense"]


def to_dense(x: Any) -> Any:
    """A sparse COO/CSR tensor made dense; a dense tensor as it is (``torch.spmm(dense, x)`` works)."""
    if isinstance(x, (COOTensor, CSRTensor)):
        return x.to_dense()
    return x
