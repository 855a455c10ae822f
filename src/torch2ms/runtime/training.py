"""Helpers for converted training steps (convert/constructs/training/general.py writes their calls)."""

from __future__ import annotations

from typing import Any

__all__ = ["accumulate_grads"]


def accumulate_grads(total: Any, grads: Any) -> tuple:
    """torch's ``.grad`` after one more ``backward()``: the sum of the gradient tuples since the last
    ``zero_grad()`` (``total`` is None right after it)."""
    if total is None:
        return tuple(grads)
    return tuple(a + b for a, b in zip(total, grads))
