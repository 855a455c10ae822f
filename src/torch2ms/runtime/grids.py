"""torch.meshgrid for any number of tensors: MindSpore's Meshgrid primitive takes two or more (GRAPH_MODE
rejects one: "the number of input tensors must be greater than 1"), torch's grid of one tensor is that
tensor. Needs MindSpore only."""

from __future__ import annotations

from typing import Any

from mindspore import ops

__all__ = ["meshgrid"]


def meshgrid(*tensors: Any, indexing: str = "ij") -> tuple:
    """torch.meshgrid(*tensors, indexing): one tensor gives itself (as a 1-tuple), more go to ops.meshgrid."""
    if len(tensors) == 1:
        return (tensors[0].view(-1),)
    return ops.meshgrid(*tensors, indexing=indexing)
