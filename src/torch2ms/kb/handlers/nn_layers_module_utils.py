"""Handlers for kb/data/nn_layers_module_utils.toml (torch.nn layers, Module methods and utils)."""

from __future__ import annotations

from ...i18n import _
from ..schema import Entry
from ..source import NOT_LITERAL, literal, paren
from ..transforms import Unsupported, handler


@handler
def module_type(bound: dict[str, str], receiver: str | None, entry: Entry) -> str:
    """``m.type(torch.float64)`` → ``m.to(mindspore.float64)``; torch's type-name strings are refused."""
    dst = bound.get("dst_type")
    if dst is None:
        raise Unsupported(_("Module.type() needs dst_type"))
    if isinstance(literal(dst), str):
        raise Unsupported(
            _("Module.type({dst}): pass a dtype (mindspore.float64 for 'torch.DoubleTensor')").format(dst=dst)
        )
    return f"{paren(receiver or 'self')}.to({dst})"


@handler
def ntuple(bound: dict[str, str], receiver: str | None, entry: Entry) -> str:
    """``_ntuple(n)`` → a function making an n-tuple from a scalar and a tuple from an iterable."""
    n = bound.get("n")
    if n is None or literal(n) is NOT_LITERAL:
        raise Unsupported(_("_ntuple(n) needs a literal n"))
    return f"(lambda x: tuple(x) if isinstance(x, (list, tuple)) else (x,) * {literal(n)})"


def _repeat(bound: dict[str, str], n: int) -> str:
    x = paren(bound["x"])
    return f"(tuple({x}) if isinstance({x}, (list, tuple)) else ({x},) * {n})"


@handler
def single(bound: dict[str, str], receiver: str | None, entry: Entry) -> str:
    """``_single(x)``: x as a 1-tuple (an iterable as a tuple)."""
    return _repeat(bound, 1)


@handler
def pair(bound: dict[str, str], receiver: str | None, entry: Entry) -> str:
    """``_pair(x)``: x as a 2-tuple (an iterable as a tuple)."""
    return _repeat(bound, 2)


@handler
def triple(bound: dict[str, str], receiver: str | None, entry: Entry) -> str:
    """``_triple(x)``: x as a 3-tuple (an iterable as a tuple)."""
    return _repeat(bound, 3)


@handler
def quadruple(bound: dict[str, str], receiver: str | None, entry: Entry) -> str:
    """``_quadruple(x)``: x as a 4-tuple (an iterable as a tuple)."""
    return _repeat(bound, 4)
