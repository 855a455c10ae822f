"""torch._assert as a function call: converted code asserts where torch did, in both modes."""

from __future__ import annotations

from typing import Any

__all__ = ["assert_true"]


def assert_true(condition: Any, message: str = "") -> None:
    """torch._assert(condition, message): raise AssertionError when the condition is false.

    An ``assert`` statement cannot stand where torch._assert is an expression (a lambda, a
    call argument); this function can, and GRAPH_MODE compiles its ``if``/``raise``.
    """
    if not condition:
        raise AssertionError(message)
