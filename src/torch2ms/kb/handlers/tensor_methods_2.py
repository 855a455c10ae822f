"""Handlers for the torch.Tensor methods of tensor_methods_2.toml (issue 14's Tensor share)."""

from __future__ import annotations

from ..schema import Entry
from ..source import paren
from ..transforms import handler


def _receiver(receiver: str | None) -> str:
    """The receiver source (``self`` when called unbound), parenthesised unless atomic."""
    return paren(receiver or "self")


@handler
def bitwise_not(bound: dict[str, str], receiver: str | None, entry: Entry) -> str:
    """``x.bitwise_not()`` → ``ops.invert(x)`` for integers, ``x.logical_not()`` for booleans.

    MindSpore's BitwiseNot has no CPU kernel and its ``~`` on integers is a logical not; ops.invert
    rejects booleans. The dtype test is a constant in GRAPH_MODE, so only one branch is compiled.
    """
    x = _receiver(receiver)
    return f"({x}.logical_not() if {x}.dtype == mindspore.bool_ else mindspore.ops.invert({x}))"
